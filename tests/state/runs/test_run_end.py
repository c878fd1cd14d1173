"""The one place a run record is finished (state/runs/run_end.py), through the host the sequencer gives runs/
(state/run_host.py), on the default plan over a real on-disk store."""
from __future__ import annotations

import pytest

from optseq.state.runs.run_end import Decision, Ending, Move, finish_run
from optseq.state.sequencer import Sequencer

LATER = "2999-01-01T00:00:00+00:00"
"""A start after any clock now: the clock was set back while the run ran."""


@pytest.fixture
def seq(plan_path, db):
    with Sequencer.open(plan_path, db, mode="write") as s:
        yield s


def started(seq, fields: dict) -> int:
    host = seq.run_host
    with host.lock, host.writing():
        return host.append_run({"status": "running", "argv": ["true"], "pid": 1, "started": LATER, "passes": 0,
                                **fields})["id"]


def test_a_compare_ends_no_earlier_than_it_started_and_its_row_says_so(seq):
    run = started(seq, {"kind": "compare", "compare": {"target": "workload"}})
    end = finish_run(seq.run_host, Ending(run, "succeeded", "not slower", {"detail": "measured"}, marks_stack=False))
    stored = seq.store.get("runs", run)
    assert stored["ended"] == LATER and end.record["ended"] == LATER
    assert (stored["status"], stored["verdict"]) == ("succeeded", "not slower")
    (row,) = [c.run for c in seq.machine.runs.compares if c.id == run]
    assert (row.status, row.verdict, row.ended) == ("succeeded", "not slower", LATER)


def test_a_refused_decision_is_kept_as_a_note_and_the_record_stands(seq):
    run = started(seq, {"lever": "julia_port"})
    end = finish_run(seq.run_host, Ending(
        run, "succeeded", "adopt", {"detail": "measured"}, moves=(Move("julia_port", "adopt"),),
        decisions=(Decision("julia_port", "adopt", why="faster", rule="manual", runs=(run,)),)))
    assert end.decided == {}
    (said,) = end.said
    assert said.startswith("not decided: ")
    stored = seq.store.get("runs", run)
    assert stored["notes"] == [said] and stored["status"] == "succeeded" and stored["detail"] == "measured"
    assert seq.machine.models["julia_port"].outcome is None


def test_a_screen_names_each_lever_a_refusal_is_for_and_keeps_its_leading_note(seq):
    run = started(seq, {"kind": "screen", "lever": None})
    end = finish_run(seq.run_host, Ending(
        run, "succeeded", None, {"detail": "screened"}, name_refused=True, kept=("1 process left running",),
        decisions=(Decision("julia_port", "adopt", why="faster", rule="screen", runs=(run,), source="screen"),)))
    (said,) = end.said
    assert said.startswith("julia_port not decided: ")
    assert seq.store.get("runs", run)["notes"] == ["1 process left running", said]
