"""Decide a lever by hand: an outcome and the rationale the decision record keeps."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.widgets import Input, Select, Static

from optseq.console.tui.dialogs.form import FormDialog, FormInvalid, select, text_input
from optseq.state.api import measured_configs

if TYPE_CHECKING:
    from optseq.state.api import KeptRun


class DecideDialog(FormDialog):
    """Outcomes come from the plan; an experiment without a fixed list offers the configs its runs measured.

    The choice is always a list, so no typed name can be refused after the rationale was written.
    """

    AUTO_FOCUS = "#outcome"

    def __init__(self, lever, runs: Sequence[KeptRun] = ()) -> None:
        super().__init__(f"decide {lever.id} by hand")
        self.lever = lever
        self.configs = measured_configs(runs) if lever.kind == "experiment" and not lever.outcomes[:-1] else None
        """The measured configs of an experiment that picks one (None for a lever with fixed outcomes)."""

    @property
    def outcomes(self) -> list[str]:
        return list(self.lever.outcomes) if self.configs is None else [*self.configs, "defer"]

    def fields(self):
        yield "outcome", select([(o, o) for o in self.outcomes], "outcome")
        yield "rationale", text_input("why", placeholder="required: why this decision")

    def notes(self):
        if self.configs == []:
            yield Static(f"no run of {self.lever.id} has measured a config yet: run it (r) to choose one, "
                         "or defer it", classes="form-note", markup=False)

    def result(self) -> dict:
        outcome = self.chosen(self.query_one("#outcome", Select), "an outcome (" + ", ".join(self.outcomes) + ")")
        why = self.query_one("#why", Input).value.strip()
        if not why:
            raise FormInvalid("a manual decision needs a rationale")
        return {"outcome": outcome, "why": why}
