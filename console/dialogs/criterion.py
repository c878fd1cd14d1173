"""Record one criterion result of a decision lever: candidate, criterion, pass or fail, evidence."""
from __future__ import annotations

from textual.widgets import Input, Select

from optseq.console.dialogs.form import FormDialog, select, text_input


class CriterionDialog(FormDialog):
    """Defaults to the first pending (candidate, criterion); the outcome must be chosen."""

    AUTO_FOCUS = "#outcome"

    def __init__(self, lever, view: dict) -> None:
        super().__init__(f"record a criterion result of {lever.id}")
        self.lever = lever
        results = view.get("criteria") or {}
        self.pending = [(cand.id, crit.id) for cand in lever.criteria.candidates
                        for crit in lever.criteria.criteria
                        if results.get(cand.id, {}).get("status") == "pending"
                        and results.get(cand.id, {}).get("results", {}).get(crit.id) == "pending"]

    def fields(self):
        cand0, crit0 = self.pending[0] if self.pending else (Select.NULL, Select.NULL)
        gate = self.lever.criteria
        yield "candidate", select([(c.title or c.id, c.id) for c in gate.candidates], "candidate", cand0)
        yield "criterion", select([(f"{c.id} {c.title}" if c.title != c.id else c.id, c.id)
                                   for c in gate.criteria], "criterion", crit0)
        yield "outcome", select([("pass", "pass"), ("fail", "fail")], "outcome")
        yield "evidence", text_input("evidence", placeholder="what shows it (a number, a doc)")

    def result(self) -> dict:
        return {"candidate": self.chosen(self.query_one("#candidate", Select), "a candidate"),
                "criterion": self.chosen(self.query_one("#criterion", Select), "a criterion"),
                "outcome": self.chosen(self.query_one("#outcome", Select), "pass or fail"),
                "evidence": self.query_one("#evidence", Input).value.strip()}
