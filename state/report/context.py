"""What every part of the export reads, gathered once as the doc starts: the plan in the doc's language, the
machine its records were replayed onto, those records decoded, the doc's labels and language, the levers moved
since the plan, the lever `--run next` runs, the charts to link and the doc's date. Each part (lever_words.py,
tables.py, graph.py, hours.py, …) is given it in its constructor; none reads another's attributes."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import LeverModel
from optseq.state.plan.model import Plan
from optseq.state.report.records import Records


@dataclass(frozen=True)
class DocContext:
    plan: Plan
    """The plan, its prose in the doc's language (the machine's plan is the stored one)."""
    machine: PlanMachine
    records: Records
    labels: dict[str, str]
    """The doc's words (labels.LABELS[lang])."""
    lang: str
    changed: frozenset[str]
    """Levers whose state moved since the plan: their text is generated, the others keep the plan's words."""
    next: str | None
    """The lever status calls next (PlanMachine.next)."""
    charts: Mapping[str, str]
    """lever id -> its chart's path relative to the doc; empty for a doc whose charts are written nowhere."""
    day: str | None
    """The doc's date for its closing mark, None for an undated doc."""


def doc_context(plan: Plan, machine: PlanMachine, records: Records, lang: str, words: dict[str, str], *,
                charts: Mapping[str, str], day: str | None) -> DocContext:
    """`plan` already in the doc's language (plan.prose.localized), `words` that language's labels."""
    fresh = PlanMachine(plan)
    changed = frozenset(lid for lid, model in machine.models.items()
                        if _snapshot(model) != _snapshot(fresh.models[lid]))
    return DocContext(plan, machine, records, words, lang, changed, machine.next(), dict(charts), day)


def _snapshot(model: LeverModel) -> tuple:
    return model.state, model.outcome, model.plan_doc, dict(model.results), model.decision_seq
