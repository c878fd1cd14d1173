"""A history on the default plan that sets every part of a lever a snapshot keeps (a decision as stored, with a
sync's origin and nulls; a closed lever's said; a last run with the rule's said; a watch; a landing; a decision
cleared by an inconclusive re-measure; a device that was unavailable; a stale reason's said), replayed onto the
lever machine alone. tests/state/lifecycle/snapshot_v1.json is this history's snapshot as optseq 48cf01a wrote it
(`python tests/state/lifecycle/snapshot_scenario.py` under that commit's code prints it)."""
from __future__ import annotations

import json
from typing import Any

from optseq.state.lifecycle import snapshot
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.plan import loader
from optseq.state.plan.model import Plan

from optseq.state.bench.store import DEFAULT_PLAN

SAID = {"key": "ci_above", "fields": {"low": "1.21", "min": "1.10"}}


def replayed() -> tuple[Plan, PlanMachine]:
    plan = loader.load(DEFAULT_PLAN)
    machine = PlanMachine(plan)
    seq = 0

    def add(table: str, **record: Any) -> int:
        nonlocal seq
        seq += 1
        record.setdefault("id", seq)
        machine.apply(table, {**record, "seq": seq, "at": f"2026-11-{seq:02d}T10:00:00+00:00"})
        return seq

    def run(lever: str, verdict: str | None, status: str = "succeeded", **more: Any) -> int:
        # a finished run replays as the store keeps it: one record, its final status
        summary = {"stats": {"estimate": 1.3, "ci_low": 1.21, "ci_high": 1.4, "n": 8},
                   "verdict": {"outcome": verdict, "reason": "CI [1.21, 1.40] above 1.10", "said": SAID}}
        return add("runs", lever=lever, status=status, verdict=verdict, summary=summary,
                   started="2026-11-01T09:00:00+00:00", ended="2026-11-01T09:30:00+00:00",
                   infra={"adopted": sorted(machine.infra()["adopted"]), "model": {}},
                   fingerprint={"device": "cpu", "code_hash": "h1"}, **more)

    add("decisions", lever="julia_port", outcome="NO-GO", auto=True, rule="criteria", why="c4 fails", runs=[],
        stats=None, config=None, supersedes=None)  # closes port
    add("events", type="plan", lever="option_b", path="docs/plans/option_b.md")
    first = run("option_b", "adopt")
    add("decisions", lever="option_b", outcome="adopt", auto=True, rule="ab", why="faster", runs=[first],
        stats={"estimate": 1.3, "ci_low": 1.21, "ci_high": 1.4}, config=None, supersedes=None,
        origin={"writer": "bob", "n": 3})
    add("runs", lever="option_b", status="succeeded", watch=True, verdict="eroded", ended="2026-11-05",
        summary={"stats": {"estimate": 1.04, "ci_low": 0.98, "ci_high": 1.09}},
        fingerprint={"repo": {"head": "d4e5f6a7"}})
    add("events", type="landed", lever="option_b", commit="c0ffee1", since="beef123")
    add("decisions", lever="model_size", outcome="h32x2", auto=False, rule=None, why="cheap", runs=[], stats=None,
        config={"name": "h32x2", "hidden": 32}, supersedes=None)
    amp = run("amp", "adopt")
    add("decisions", lever="amp", outcome="adopt", auto=True, rule="ab", why="faster", runs=[amp],
        stats={"estimate": 1.3}, config=None, supersedes=None)
    run("amp", "inconclusive")  # the re-measure clears amp's decision: measured, `cleared`
    run("compile", None, status="unavailable")
    option_a = run("option_a", "adopt")
    add("decisions", lever="option_a", outcome="adopt", auto=True, rule="ab", why="faster", runs=[option_a],
        stats={"estimate": 1.3}, config=None, supersedes=None)
    add("events", type="stale", lever="option_a", reason="device changed: measured on cpu, now gpu",
        said={"key": "device_changed", "fields": {"was": "cpu", "now": "gpu"}})
    return plan, machine


def dumped() -> dict[str, Any]:
    plan, machine = replayed()
    return json.loads(json.dumps(snapshot.dump(machine, plan)))


if __name__ == "__main__":
    print(json.dumps(dumped(), indent=1, sort_keys=False))
