"""Decide a lever by hand: an outcome and the rationale the decision record keeps."""
from __future__ import annotations

from textual.widgets import Input, Select

from optseq.console.dialogs.form import FormDialog, FormInvalid, select, text_input


class DecideDialog(FormDialog):
    """Outcomes come from the plan; an experiment without a fixed list takes a config name typed in."""

    AUTO_FOCUS = "#outcome"

    def __init__(self, lever) -> None:
        super().__init__(f"decide {lever.id} by hand")
        self.lever = lever
        self.free = lever.kind == "experiment" and not lever.outcomes[:-1]

    def fields(self):
        if self.free:
            yield "outcome", text_input("outcome", placeholder="a config name (e.g. h1024x6) or defer")
        else:
            yield "outcome", select([(o, o) for o in self.lever.outcomes], "outcome")
        yield "rationale", text_input("why", placeholder="required: why this decision")

    def result(self) -> dict:
        widget = self.query_one("#outcome")
        if isinstance(widget, Select):
            outcome = self.chosen(widget, "an outcome")
        else:
            outcome = widget.value.strip()
            if not outcome:
                raise FormInvalid("give an outcome")
        why = self.query_one("#why", Input).value.strip()
        if not why:
            raise FormInvalid("a manual decision needs a rationale")
        return {"outcome": outcome, "why": why}
