"""The lever machine as plain data and back: what lets a command start from the store's snapshot instead of
replaying every record since the store began.

A snapshot belongs to one plan (its key): the same records replayed under an edited plan may end
elsewhere, so a snapshot of another plan is never used; the caller replays from the start instead.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from optseq.state.kinds import LeverState
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import LeverModel
from optseq.state.plan.model import Plan
from optseq.state.lifecycle.run_index import RunIndex

VERSION = 1
"""The layout below; a snapshot of another version is replayed over, never read."""
FIELDS = ("plan_doc", "outcome", "decision_seq", "decision", "stale_reason", "stale_said", "closed_by", "closed_said",
          "closed_by_lever", "origin", "cleared", "last_run", "unavailable", "landed", "watch")
"""LeverModel fields kept as they are (JSON already). A field a snapshot of an older release lacks reads None: the
saids are optional (the export falls back to the stored text), so such a snapshot stays VERSION 1."""


def plan_key(plan: Plan) -> str:
    """Identifies the plan's content, wherever its file lies."""
    return hashlib.sha256(repr(dataclasses.replace(plan, path="")).encode("utf-8")).hexdigest()[:16]


def dump(machine: PlanMachine, plan: Plan) -> dict[str, Any]:
    cited: set[int] = set()
    for model in machine.models.values():
        for decision in (model.decision, (model.cleared or {}).get("decision")):
            cited.update(r for r in (decision or {}).get("runs") or () if isinstance(r, int))
        last = (model.last_run or {}).get("id")
        if model.state == LeverState.MEASURED and isinstance(last, int):
            cited.add(last)  # a measured lever's numbers stand on its last run's stack
    machine.runs.prune(cited)
    return {
        "version": VERSION,
        "plan": plan_key(plan),
        "facts": dict(machine.facts),
        "last_device": machine.last_device,
        "fired": dict(machine.fired),
        "runs": machine.runs.to_dict(),
        "levers": {lid: _model(m) for lid, m in machine.models.items()},
    }


def load(plan: Plan, data: dict[str, Any] | None) -> PlanMachine | None:
    """The machine a snapshot describes, or None when it is of another plan or layout (replay instead)."""
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("plan") != plan_key(plan):
        return None
    machine = PlanMachine(plan, settle=False)  # what the priors and gates would settle, the snapshot says
    machine.facts.update(data.get("facts") or {})
    machine.last_device = data.get("last_device")
    machine.fired = dict(data.get("fired") or {})
    machine.runs = RunIndex.from_dict(data.get("runs") or {})
    levers = data.get("levers") or {}
    if set(levers) != set(machine.models):
        return None
    for lid, saved in levers.items():
        model = machine.models[lid]
        for name in FIELDS:
            setattr(model, name, saved.get(name))
        model.results = {(c, k): (o, e) for c, k, o, e in saved.get("results") or ()}
        model.state = saved["state"]  # transitions keeps the state in this attribute
    return machine


def _model(model: LeverModel) -> dict[str, Any]:
    out = {name: getattr(model, name) for name in FIELDS}
    out["state"] = model.state
    out["results"] = [[c, k, o, e] for (c, k), (o, e) in model.results.items()]
    return out
