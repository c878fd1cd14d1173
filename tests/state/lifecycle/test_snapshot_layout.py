"""The snapshot's layout across the typed lever model: a snapshot the dict-keeping code wrote (snapshot_v1.json,
optseq 48cf01a, from snapshot_scenario's history) loads into the lever's Structs, and this code writes the same
JSON for the same history, so VERSION stays 1 both ways."""
from __future__ import annotations

import json
from pathlib import Path

from optseq.state.kinds import RunStatus, WatchVerdict
from optseq.state.lifecycle import snapshot
from optseq.state.lifecycle.lever_records import Cleared, Landed, LastRun, Unavailable, Watch
from optseq.state.record_types import Decision
from tests.state.lifecycle.snapshot_scenario import SAID, dumped, replayed

OLD = Path(__file__).with_name("snapshot_v1.json")
REASON = "CI [1.21, 1.40] above 1.10"


def old_snapshot(plan) -> dict:
    data = json.loads(OLD.read_text())
    data["plan"] = snapshot.plan_key(plan)  # the plan's identity as this code computes it: the same plan file
    return data


def test_a_snapshot_the_old_code_wrote_loads_as_types():
    plan, replay = replayed()
    data = old_snapshot(plan)
    machine = snapshot.load(plan, data)
    assert machine is not None
    m = machine.models
    assert {lid: model.state for lid, model in m.items()} == {lid: model.state for lid, model in replay.models.items()}
    assert all(type(model.state) is str for model in m.values())  # transitions' states are plain strings
    option_b = m["option_b"]
    assert option_b.decision == Decision(id=4, seq=4, at="2026-11-04T10:00:00+00:00", lever="option_b",
                                         outcome="adopt", auto=True, rule="ab", why="faster", runs=[3],
                                         stats={"estimate": 1.3, "ci_low": 1.21, "ci_high": 1.4},
                                         origin={"writer": "bob", "n": 3})
    assert option_b.decision_stored == data["levers"]["option_b"]["decision"]  # as stored: nulls, and all its keys
    assert option_b.last_run == LastRun(id=3, status=RunStatus.SUCCEEDED, verdict="adopt", reason=REASON, said=SAID)
    assert option_b.watch == Watch(run=5, verdict=WatchVerdict.ERODED, estimate=1.04, ci_low=0.98, ci_high=1.09,
                                   commit="d4e5f6a7", at="2026-11-05")
    assert option_b.landed == Landed(commit="c0ffee1", since="beef123", at="2026-11-06T10:00:00+00:00")
    assert m["amp"].decision is None and m["amp"].cleared == Cleared(
        decision=Decision(id=9, seq=9, at="2026-11-09T10:00:00+00:00", lever="amp", outcome="adopt", auto=True,
                          rule="ab", why="faster", runs=[8], stats={"estimate": 1.3}),
        outcome="adopt", why=f"re-measured inconclusive in run 10: {REASON}", run=10,
        decision_stored=data["levers"]["amp"]["cleared"]["decision"])
    assert m["compile"].unavailable == Unavailable(reason=REASON, run=11, device="cpu")
    assert m["option_a"].stale_said == {"key": "device_changed", "fields": {"was": "cpu", "now": "gpu"}}
    assert m["port"].closed_said == {"key": "decided", "fields": {"lever": "julia_port", "outcome": "NO-GO"}}
    # and it reads as the replay's machine does, field for field
    for lid, model in m.items():
        assert model == replay.models[lid], lid
    assert machine.eroded_text("option_b") == replay.eroded_text("option_b")


def test_the_snapshot_is_written_as_the_old_code_wrote_it():
    """Every lever's parts as the dict-keeping code wrote them, key for key and in order: the same JSON."""
    plan, _ = replayed()
    assert json.dumps(dumped()) == json.dumps(old_snapshot(plan))


def test_an_old_snapshot_loaded_and_written_again_is_the_replays():
    plan, _ = replayed()
    machine = snapshot.load(plan, old_snapshot(plan))
    assert machine is not None
    assert json.loads(json.dumps(snapshot.dump(machine, plan))) == dumped()


def test_a_snapshot_of_an_older_release_without_the_newer_fields_loads_them_empty():
    plan, _ = replayed()
    data = old_snapshot(plan)
    for saved in data["levers"].values():
        for name in ("stale_said", "closed_said", "stale_reason", "closed_by", "watch", "landed"):
            saved.pop(name, None)
    machine = snapshot.load(plan, data)
    assert machine is not None
    port = machine.models["port"]
    assert (port.closed_by, port.closed_said, port.stale_reason) == ("", None, "")
    assert machine.models["option_b"].watch is None and machine.models["option_b"].landed is None
