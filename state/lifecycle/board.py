"""What the lever machine knows, held once and handed to each of its parts (machine.py): the plan, every lever's
model, the facts, the run index, the decision points fired, the last device; and the events a move derives."""
from __future__ import annotations

from collections.abc import Callable

from optseq.state.plan import gates
from optseq.state.plan.definition import definition
from optseq.state.plan.model import Plan
from optseq.state.lifecycle.fields import Derived
from optseq.state.lifecycle.run_index import RunIndex
from optseq.state.lifecycle.states import LeverModel


class Board:
    """The machine's data. Each part reads and moves it; none keeps a copy (a snapshot replaces `runs` whole)."""

    plan: Plan
    models: dict[str, LeverModel]
    facts: dict[str, bool]
    definitions: dict[str, dict[str, str]]
    """What each lever is now, part by part: a number measured on another definition is stale."""
    depends: dict[str, set[str]]
    """lever -> every lever it depends on, transitively (its gates' levers and its remeasure_when)."""
    runs: RunIndex
    """What the runs left: the stack each evidence run was measured on (who goes stale when a lever leaves the
    stack), each lever's latest runs, the newest code hash."""
    fired: dict[str, str | None]
    """decision point id -> when it fired."""
    last_device: str | None
    cannot_run: Callable[[str], str | None] | None
    """lever id -> why it cannot run though ready (a branch merged before it ran), or None: git's answer, which the
    sequencer gives (ReadViews.cannot_run); `next` and the group runs skip such a lever."""

    def __init__(self, plan: Plan, models: dict[str, LeverModel], facts: dict[str, bool],
                 definitions: dict[str, dict[str, str]], depends: dict[str, set[str]]) -> None:
        # a plain class, not a dataclass, as LeverModel is: status imports no dataclasses for the machine
        self.plan, self.models, self.facts, self.definitions, self.depends = plan, models, facts, definitions, depends
        self.runs = RunIndex()
        self.fired = {}
        self.last_device = None
        self.cannot_run = None

    @classmethod
    def of(cls, plan: Plan) -> Board:
        """Every lever blocked, its plan's criteria results recorded; no machine moved yet."""
        models: dict[str, LeverModel] = {}
        for lever in plan.levers:
            model = LeverModel(lever, plan_doc=lever.plan_doc)  # blocked; its machine comes with its first move
            if lever.criteria:
                for cand in lever.criteria.candidates:
                    for crit, outcome in cand.results.items():
                        model.results[(cand.id, crit)] = (outcome, "recorded in the plan")
            models[lever.id] = model
        return cls(plan=plan, models=models, facts={fact.id: fact.value for fact in plan.facts},
                   definitions={lever.id: definition(lever, plan.path) for lever in plan.levers},
                   depends=_depends(plan))


class Effects:
    """The derived events of the record being applied, gathered from every part that makes one."""

    def __init__(self) -> None:
        self._events: list[Derived] = []

    def add(self, event: Derived) -> None:
        self._events.append(event)

    def clear(self) -> None:
        self._events = []

    def take(self) -> list[Derived]:
        """The events gathered since the last clear, handed over once."""
        events, self._events = self._events, []
        return events


def _depends(plan: Plan) -> dict[str, set[str]]:
    """lever -> every lever it depends on, transitively: its gates' levers and its remeasure_when."""
    direct = {lever.id: {a.lever for a in gates.atoms(lever.requires) if a.lever} | set(lever.remeasure_when)
              for lever in plan.levers}
    closure: dict[str, set[str]] = {}
    for lid in direct:
        seen: set[str] = set()
        todo = list(direct[lid])
        while todo:
            dep = todo.pop()
            if dep in seen or dep not in direct:
                continue
            seen.add(dep)
            todo.extend(direct[dep])
        closure[lid] = seen
    return closure


__all__ = ["Board", "Effects"]
