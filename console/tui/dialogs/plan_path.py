"""Mark a lever's plan as written: the plan doc's path."""
from __future__ import annotations

from textual.widgets import Input

from optseq.console.tui.dialogs.form import REFUSALS, FormDialog, FormInvalid, text_input


class PlanDialog(FormDialog):
    """Suggests docs/plans/LEVER.md, or the path the lever already has.

    `check` is the store's own test of a plan doc path (Actions.check_plan_doc), so the dialog refuses
    exactly what `optseq plan` refuses, and its error goes as soon as the path names a doc. A path that could
    name a doc but none is there yet comes back `missing`: the screen offers to create it from a template.
    """

    AUTO_FOCUS = "#path"

    def __init__(self, lever_id: str, current: str | None, check=None) -> None:
        super().__init__(f"mark the plan of {lever_id} written")
        self.suggested = current or f"docs/plans/{lever_id}.md"
        self.check = check

    def fields(self):
        yield "plan doc", text_input("path", self.suggested)

    def result(self) -> dict:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            raise FormInvalid("give the plan doc's path")
        missing = False
        if self.check is not None:
            try:
                missing = self.check(path, must_exist=False) is None
            except REFUSALS as exc:
                raise FormInvalid(str(exc)) from None
        return {"path": path, "missing": missing}
