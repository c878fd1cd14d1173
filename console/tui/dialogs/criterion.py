"""Record one criterion result of a decision lever: candidate, criterion, pass or fail, evidence."""
from __future__ import annotations

import re

from typing import TYPE_CHECKING

from textual.widgets import Input, Select, Static

from optseq.console.tui.dialogs.form import FormDialog, select, text_input

if TYPE_CHECKING:
    from optseq.state.api import CandidateStatus, LeverStatus


def describe(criterion, doc: str | None = None) -> str:
    """`runs: runs end to end on this machine`: the id with what the plan says the criterion is. A title that only
    says the id again (the seed's `c4` is `criterion 4`) is no title: the choice says the wording is in the plan
    doc, which the note under the fields names."""
    about = criterion.title.strip() if criterion.title and not _restates(criterion.id, criterion.title) else ""
    if about:
        return f"{criterion.id}: {about}"
    return f"{criterion.id} (worded in the plan doc)" if doc else f"{criterion.id} (the plan gives no description)"


def _restates(crit_id: str, title: str) -> bool:
    """`criterion 4` of `c4`, `c4` of `c4`: a title with nothing in it the id does not say."""
    words = re.sub(r"[\s_-]", "", title.lower())
    number = "".join(ch for ch in crit_id if ch.isdigit())
    return words in (crit_id.lower(), f"criterion{number}", f"criterion{crit_id.lower()}")


def results_lines(gate, results: dict[str, CandidateStatus]) -> list[str]:
    """One line per candidate, each result named by its criterion: `Torch.jl  c1 pass · c4 pending`.

    A candidate the plan records as failed as a whole has no per-criterion results to show: the line says so
    (with the plan's evidence) rather than listing every criterion as pending beside a FAIL.
    """
    width = max((len(c.title or c.id) for c in gate.candidates), default=0)
    lines = []
    for cand in gate.candidates:
        mine = results.get(cand.id)
        name = (cand.title or cand.id).ljust(width)
        per = mine.results if mine is not None else {}
        if mine is not None and mine.status == "fail" and all(per.get(c.id, "pending") == "pending" for c in gate.criteria):
            lines.append(f"{name}  failed as a whole" + (f" ({cand.evidence})" if cand.evidence else ""))
        else:
            lines.append(f"{name}  " + " · ".join(f"{c.id} {per.get(c.id, 'pending')}" for c in gate.criteria))
    return lines


class CriterionDialog(FormDialog):
    """Defaults to the first pending (candidate, criterion); the outcome must be chosen."""

    AUTO_FOCUS = "#outcome"

    def __init__(self, lever, view: LeverStatus) -> None:
        super().__init__(f"record a criterion result of {lever.id}")
        self.lever = lever
        self.results = view.candidates
        self.pending = [(cand.id, crit.id) for cand in lever.criteria.candidates
                        for crit in lever.criteria.criteria
                        if (entry := self.results.get(cand.id)) is not None and entry.status == "pending"
                        and entry.results.get(crit.id) == "pending"]

    def fields(self):
        cand0, crit0 = self.pending[0] if self.pending else (Select.NULL, Select.NULL)
        gate = self.lever.criteria
        yield "candidate", select([(c.title or c.id, c.id) for c in gate.candidates], "candidate", cand0)
        yield "criterion", select([(describe(c, self.lever.plan_doc), c.id) for c in gate.criteria], "criterion", crit0)
        yield "outcome", select([("pass", "pass"), ("fail", "fail")], "outcome")
        yield "evidence", text_input("evidence", placeholder="what shows it (a number, a doc)")

    def notes(self):
        if self.lever.plan_doc:  # the seed names its criteria by number only; their wording lives in the doc
            yield Static(f"what each criterion asks: {self.lever.plan_doc}", id="criteria-doc", classes="form-note",
                         markup=False)
        yield Static("results so far:\n" + "\n".join(results_lines(self.lever.criteria, self.results)),
                     id="criteria-results", classes="form-note", markup=False)

    def result(self) -> dict:
        return {"candidate": self.chosen(self.query_one("#candidate", Select), "a candidate"),
                "criterion": self.chosen(self.query_one("#criterion", Select), "a criterion"),
                "outcome": self.chosen(self.query_one("#outcome", Select), "pass or fail"),
                "evidence": self.query_one("#evidence", Input).value.strip()}
