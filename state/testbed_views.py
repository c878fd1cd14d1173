"""Which testbed a lever's numbers came from, for the views, and where a watch may re-check an adopted gain, for
the actions: functions of the plan, the lever machine and this process' testbed (state/runs/testbed.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optseq.state.errors import InputError
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import LeverModel
from optseq.state.plan.model import Plan
from optseq.state.plan.testbed import decides, foreign_note, is_named, of


def testbed_view(plan: Plan, machine: PlanMachine, model: LeverModel) -> dict[str, Any]:
    """`testbed`: the testbed the lever's standing numbers came from (its decision's evidence, else its latest run),
    None where unknown; `elsewhere`: what its latest run, measured on a testbed whose numbers do not decide this
    plan, says of itself (it decided nothing), until a deciding run follows it; `testbeds_shown`: whether the
    store holds more than one testbed's runs; `testbed_note`: what status' note says of it."""
    runs = machine.runs
    evidence = (model.decision.runs if model.decision else None) or []
    kept = runs.last.get(model.lever.id)
    latest = {"testbed": kept.testbed} if kept is not None else {}  # what plan/testbed.py reads of a record
    found = next((t for t in (runs.testbed(r) for r in evidence) if t), None) or of(latest)
    elsewhere = None if decides(latest, plan.testbed) else f"run {kept.id if kept else None} " + foreign_note(
        latest, plan.testbed)
    shown = len(runs.testbeds) > 1
    # status' note: another testbed's run, which decided nothing; else, in a store of several, where they came from
    note = elsewhere or (f"measured on {found['name']}" if shown and found else None)
    return {"testbed": found["name"] if found else None, "elsewhere": elsewhere, "testbeds_shown": shown,
            "testbed_note": note}


def testbeds(plan: Plan, machine: PlanMachine) -> dict[str, Any]:
    """The status' `testbed`: this process' ({id, name, parts}, or `error` for an OPTSEQ_TESTBED that names none),
    the plan's deciding one and every testbed a run of this store was measured on (name -> fingerprint id)."""
    try:
        found: dict[str, Any] = dict(here(plan))
    except InputError as exc:
        found = {"error": str(exc)}
    return {**found, "decides": plan.testbed.decides, "seen": dict(machine.runs.testbeds)}


def watch_refusal(plan: Plan, machine: PlanMachine, runner: Callable[[], object], lever_id: str) -> str | None:
    """Why a watch of `lever_id` here would measure against another testbed's numbers (one line), or None: an
    adopted gain is re-checked on the testbed its evidence came from, and only where numbers decide the plan.
    `runner` gives where this process sends lever runs (LeverRuns.runner), asked only here."""
    from optseq.state.runs.testbed import ENV

    try:
        cluster = getattr(runner(), "name", "local") != "local"
    except Exception:  # a runner that cannot be made refuses the run itself, in its own line
        cluster = False
    if cluster:  # a node measures, not this machine, and its run records the node's testbed (run_record.py)
        return None
    model = machine.models[lever_id]
    runs = (model.decision.runs if model.decision else None) or []
    where = next((t for t in (machine.runs.testbed(r) for r in runs) if t), None)
    local = here(plan)
    wanted = next((w for w in (where["name"] if where else None, plan.testbed.decides)
                   if w is not None and not is_named(local, w)), None)
    if wanted is None:
        return None
    how = (f"was adopted on {wanted}" if where and wanted == where["name"]
           else f"decides on {wanted} ([testbed] decides)")
    return (f"watch: {lever_id} {how}; this is {local['name']}: its gain is re-checked only on {wanted} "
            f"({ENV}={wanted} there)")


def here(plan: Plan) -> dict[str, Any]:
    """{id, name, parts} of the machine this process measures on (state/runs/testbed.py)."""
    from optseq.state.runs.testbed import local

    return local(plan.testbed)
