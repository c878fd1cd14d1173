"""Set a named fact that gates read (e.g. eval_dense)."""
from __future__ import annotations

from textual.widgets import Select

from optseq.console.tui.dialogs.form import FormDialog, FormInvalid, select


class FactDialog(FormDialog):
    """The value defaults to the opposite of the fact's current value: setting a fact usually flips it."""

    AUTO_FOCUS = "#value"

    def __init__(self, facts: list, current: dict[str, bool]) -> None:
        super().__init__("set a fact")
        self.facts = facts
        self.current = current

    def fields(self):
        first = self.facts[0].id if self.facts else Select.NULL
        options = [(f"{f.id} (now {'true' if self.current.get(f.id) else 'false'})", f.id) for f in self.facts]
        yield "fact", select(options, "fact", first)
        flip = "false" if self.facts and self.current.get(self.facts[0].id) else "true"
        yield "value", select([("true", "true"), ("false", "false")], "value", flip)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "fact" and isinstance(event.value, str):  # a fact's id (Select.NULL: none chosen)
            self.query_one("#value", Select).value = "false" if self.current.get(event.value) else "true"
        super().on_select_changed(event)

    def result(self) -> dict:
        if not self.facts:
            raise FormInvalid("the plan declares no facts")
        return {"name": self.chosen(self.query_one("#fact", Select), "a fact"),
                "value": self.chosen(self.query_one("#value", Select), "a value") == "true"}
