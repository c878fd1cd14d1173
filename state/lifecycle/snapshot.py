"""The lever machine as plain data and back: what lets a command start from the store's snapshot instead of
replaying every record since the store began.

A snapshot belongs to one plan (its key): the same records replayed under an edited plan may end
elsewhere, so a snapshot of another plan is never used; the caller replays from the start instead.
"""

from typing import Any

import msgspec

from optseq.state.kinds import LeverState
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.lever_records import Cleared, SavedLever
from optseq.state.lifecycle.states import LeverModel
from optseq.state.plan.model import Plan
from optseq.state.record_types import Decision
from optseq.state.sha import hex_digest
from optseq.state.lifecycle.run_index import RunIndex

VERSION = 1
"""The layout below; a snapshot of another version is replayed over, never read."""
FIELDS = ("plan_doc", "outcome", "decision_seq", "decision", "stale_reason", "stale_said", "closed_by", "closed_said",
          "closed_by_lever", "origin", "cleared", "last_run", "unavailable", "landed", "watch")
"""LeverModel fields a snapshot keeps, in this order (the decision as the store gave it out; the parts the machine
keeps as Structs, lifecycle/lever_records.py, written by msgspec in the layout their dicts had). A field a snapshot
of an older release lacks reads empty: the saids are optional (the export falls back to the stored text), so such a
snapshot stays VERSION 1."""


class Saved(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A snapshot as dump writes it; its run index is RunIndex.from_dict's to read."""
    version: int
    plan: str | None = None
    facts: dict[str, bool] = {}
    last_device: str | None = None
    fired: dict[str, str | None] = {}
    runs: dict[str, Any] = {}
    levers: dict[str, SavedLever] = {}


def plan_key(plan: Plan) -> str:
    """Identifies the plan's content, wherever its file lies."""
    return hex_digest(repr(msgspec.structs.replace(plan, path="")))[:16]


def dump(machine: PlanMachine, plan: Plan) -> dict[str, Any]:
    cited: set[int] = set()
    for model in machine.models.values():
        for decision in (model.decision, model.cleared.decision if model.cleared else None):
            cited.update((decision.runs or ()) if decision else ())
        last = model.last_run.id if model.last_run else None
        if model.state == LeverState.MEASURED and last is not None:
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
    snap = msgspec.convert(data, Saved)  # one decode: the store checked its shape as it read it
    machine = PlanMachine(plan, settle=False)  # what the priors and gates would settle, the snapshot says
    if set(snap.levers) != set(machine.models):
        return None
    machine.facts.update(snap.facts)
    machine.last_device = snap.last_device
    machine.fired = dict(snap.fired)
    machine.runs = RunIndex.from_dict(snap.runs)
    for lid, saved in snap.levers.items():
        model = machine.models[lid]
        model.plan_doc, model.outcome, model.decision_seq = saved.plan_doc, saved.outcome, saved.decision_seq
        model.decision_stored = saved.decision
        model.decision = None if saved.decision is None else msgspec.convert(saved.decision, Decision)
        # a field an older release's snapshot lacks (or holds null) reads empty, as a fresh model's does
        model.stale_reason, model.stale_said = saved.stale_reason or "", saved.stale_said
        model.closed_by, model.closed_said = saved.closed_by or "", saved.closed_said
        model.closed_by_lever, model.origin = saved.closed_by_lever or "", saved.origin or ""
        model.cleared = None if saved.cleared is None else Cleared.saved(saved.cleared)
        model.last_run, model.unavailable = saved.last_run, saved.unavailable
        model.landed, model.watch = saved.landed, saved.watch
        model.results = {(c, k): (o, e) for c, k, o, e in saved.results or ()}
        model.state = saved.state.value  # transitions keeps the state in this attribute, a plain string (states.py)
    return machine


def _model(model: LeverModel) -> Any:
    """One lever in the layout the snapshot always had: FIELDS in order (a decision, standing or cleared, as the
    store gave it out), then `state` and `results`."""
    out: dict[str, Any] = {name: getattr(model, name) for name in FIELDS}
    out["decision"] = model.decision_stored
    out["cleared"] = None if model.cleared is None else model.cleared.to_saved()
    out["state"] = model.state
    out["results"] = [[c, k, o, e] for (c, k), (o, e) in model.results.items()]
    return msgspec.to_builtins(out)
