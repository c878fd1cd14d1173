"""Mark a lever's plan as written: the plan doc's path."""
from __future__ import annotations

from textual.widgets import Input

from optseq.console.dialogs.form import FormDialog, FormInvalid, text_input


class PlanDialog(FormDialog):
    """Suggests docs/plans/LEVER.md, or the path the lever already has."""

    AUTO_FOCUS = "#path"

    def __init__(self, lever_id: str, current: str | None) -> None:
        super().__init__(f"mark the plan of {lever_id} written")
        self.suggested = current or f"docs/plans/{lever_id}.md"

    def fields(self):
        yield "plan doc", text_input("path", self.suggested)

    def result(self) -> dict:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            raise FormInvalid("give the plan doc's path")
        return {"path": path}
