"""The run index's kept runs, compares and screens as types: decoded once where the index keeps them (a run's end,
a compare's or a screen's record and updates, the snapshot's load), read by attribute, and written to the snapshot
as the dict-keeping index wrote them, key for key."""
from __future__ import annotations

import json
from pathlib import Path

from optseq.state.kinds import RunStatus
from optseq.state.lifecycle.run_index import KeptCompare, KeptRun, KeptScreen, RunIndex
from optseq.state.record_types import Summary
from optseq.state.screen_record import ScreenRun
from optseq.state.sequencer import Sequencer
from tests.state.screen_records import write_screen

OLD = Path(__file__).with_name("snapshot_v1.json")
START = "2026-12-01T10:00:00+00:00"


def test_an_old_snapshots_kept_runs_load_typed_once_and_are_written_back_byte_for_byte():
    saved = json.loads(OLD.read_text())["runs"]
    index = RunIndex.from_dict(json.loads(json.dumps(saved)))
    amp = index.recent["amp"][-1]
    assert isinstance(amp, KeptRun) and isinstance(amp.summary, Summary)
    assert (amp.id, amp.status, amp.stats.estimate, amp.on) == (10, RunStatus.SUCCEEDED, 1.3, {"device": "cpu"})
    # a run kept as its lever's last, its last with statistics and its newest recent is one object, decoded once
    assert index.last["amp"] is amp and index.last_stats["amp"] is amp
    assert json.dumps(index.to_dict()) == json.dumps(saved)


def test_a_live_runs_end_keeps_its_start_typed_and_in_the_old_layout():
    """The final update a live run hands the index carries neither its start nor its origin: the index keeps its
    start's, after `on` and `left_running` in the stored copy (where the dict-keeping index added them), and typed."""
    index = RunIndex()
    origin = {"writer": "ci-3f2a", "id": 4}
    index.started({"id": 7, "lever": "amp", "status": "running", "started": START, "origin": origin,
                   "infra": {"adopted": []}, "fingerprint": {"device": "cpu"}})
    index.ended({"id": 7, "lever": "amp", "status": "succeeded", "verdict": "adopt", "ended": START,
                 "summary": {"stats": {"estimate": 1.2, "ratios": [1.1, 1.3], "dropped": 0}},
                 "fingerprint": {"device": "cpu"}, "leftovers": [{"pid": 1}, {"pid": 2}]})
    kept = index.last["amp"]
    assert list(kept.stored) == ["id", "lever", "status", "verdict", "ended", "summary", "on", "left_running",
                                 "started", "origin"]
    assert (kept.started, kept.origin, kept.left_running, kept.on) == (START, origin, 2, {"device": "cpu"})
    assert kept.stored_stats == {"estimate": 1.2, "ratios": [1.1, 1.3], "dropped": 0}  # every key, as stored
    again = RunIndex.from_dict(json.loads(json.dumps(index.to_dict())))
    assert again.last["amp"] == kept and list(again.last["amp"].stored) == list(kept.stored)


def test_a_compares_updates_are_kept_typed_and_merged_as_they_came():
    index = RunIndex()
    index.compare({"id": 3, "kind": "compare", "status": "running", "started": START,
                   "compare": {"target": "workload", "head": {"ref": "fast"}}})
    index.compare({"id": 3, "status": "succeeded", "verdict": "not slower", "ended": START})
    (kept,) = index.compares
    assert isinstance(kept, KeptCompare)
    assert (kept.run.status, kept.run.verdict, kept.run.started, kept.run.compare) == (
        RunStatus.SUCCEEDED, "not slower", START, {"target": "workload", "head": {"ref": "fast"}})
    assert list(kept.stored) == ["id", "status", "started", "compare", "verdict", "ended"]
    assert index.is_compare(3) and RunIndex.from_dict(json.loads(json.dumps(index.to_dict()))).compares == [kept]


def test_a_screen_is_decoded_where_it_is_kept_and_status_reads_that(tmp_path):
    """status reads the screens the index decoded as it kept them: the same objects on every read, no decode per
    view (lever_facts, the summary and the claims each decoded the kept dicts before)."""
    from optseq.state.bench.store import DEFAULT_PLAN

    record = write_screen(DEFAULT_PLAN, tmp_path / "db")
    with Sequencer.open(DEFAULT_PLAN, tmp_path / "db", mode="read") as seq:  # from the snapshot
        (kept,) = seq.machine.runs.screens
        assert isinstance(kept, KeptScreen) and isinstance(kept.run, ScreenRun)
        assert kept.run.samples_file is not None and len(kept.run.screen.blocks) == 3
        first = seq.views.status(hours=False)
        assert seq.machine.runs.screen_runs()[0] is kept.run
        assert seq.views.status(hours=False).screen == first.screen and first.screen is not None
        assert first.screen["id"] == record["id"]
