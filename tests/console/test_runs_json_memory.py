"""`optseq runs --json` keeps next to nothing a run: over stores the store bench's builder wrote (real runs through
the real API), the memory tracemalloc sees grows with N by a small per-run bound from N to 2N runs, section by
section: what the runs section leaves kept (each lever's series, spilled to a file), the superseded marks the
decisions section builds, and the change points' search over a lever's whole history. Counted bytes, not time or
RSS: the verdict is the same on a loaded machine."""
from __future__ import annotations

import contextlib
import gc
import io
import tracemalloc
from pathlib import Path

import pytest

from optseq.console.commands.runs_cmd import print_runs
from optseq.state.bench.store_build import build_store
from optseq.state.runs.lever_changes import Kept
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN
from tests.state.runs.test_change_points import history

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runs_json_memory")]

N = 400
KEPT_PER_RUN = 8
"""Bytes a run may add to what the runs section leaves kept: a Kept spills its arrays to a file every CHUNK runs
(31 to 33 a run with its arrays held in memory; a dict of each run's fields took about 1,600)."""
MARKS_PER_RUN = 14
"""Bytes a run may add to what the decisions section holds while it is written, its superseded marks built: 5 a
decision in arrays of the narrowest type and 16 for an event's text spilled (one run in ten), 7 to 10 a run in all;
their 12 a decision in arrays grown by doubling took 18 to 20."""
PEAK_PER_RUN = 45
"""Bytes a run may add to the peak of the whole command (10 to 30 today); with each lever's series in memory, its
marks grown by doubling and its search over lists of floats, 68 to 86."""
POINTS = 6000
SEARCH_PER_POINT = 52
"""Bytes a point of a lever's history may add to the peak of its change points' search over what its Kept held:
about 40 today in arrays of doubles (the log ratios, the weights, the successive differences, the sums); as
lists of floats and a sorted list for each trimmed mean it took about 72."""


class Sink(io.TextIOBase):
    """stdout for print_runs: keeps no text, notes the memory kept as the decisions section begins and as its first
    decision is written (its superseded marks built by then)."""

    def __init__(self) -> None:
        self.kept: list[int] = []

    def write(self, text: str) -> int:
        if self.kept or '\n  "decisions": [' in text:
            if len(self.kept) < 2:
                # what is kept, not the garbage waiting for the cyclic collector (json's encoder leaves a cycle a
                # record): when that last ran depends on the allocations before, not on what print_runs keeps
                gc.collect()
                self.kept.append(tracemalloc.get_traced_memory()[0])
        return len(text)


def traced(db: Path) -> tuple[int, int, int]:
    """(kept as the runs section ends, the marks kept over that as the first decision is written, the whole
    command's peak) in bytes over what was traced before print_runs began."""
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        sink = Sink()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            with contextlib.redirect_stdout(sink):
                print_runs(seq, None, True)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    runs, marks = sink.kept
    return runs - before, marks - runs, peak - before


def test_runs_json_keeps_a_few_bytes_a_run(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    build_store(DEFAULT_PLAN, small, N)
    build_store(DEFAULT_PLAN, large, 2 * N)
    traced(small)  # the lazy imports and the decoders' caches, once, outside the figures
    (kept_n, marks_n, peak_n), (kept_2n, marks_2n, peak_2n) = traced(small), traced(large)
    assert kept_2n - kept_n <= KEPT_PER_RUN * N, (kept_n, kept_2n)
    assert marks_2n - marks_n <= MARKS_PER_RUN * N, (marks_n, marks_2n)
    assert peak_2n - peak_n <= PEAK_PER_RUN * N, (peak_n, peak_2n)


def searched(n: int) -> int:
    """The peak of one lever's change points' search over n runs (what `runs --json` runs for each lever once its
    runs are written), in bytes over what its Kept holds."""
    estimates, lows, highs = history(n, n // 2, 0.1, 0.02, 11, run_sd=0.03)
    kept = Kept()
    for i, (estimate, low, high) in enumerate(zip(estimates, lows, highs)):
        kept.add({"id": i + 1, "lever": "fast", "summary": {"stats": {"estimate": estimate, "ci_low": low,
                                                                      "ci_high": high}}})
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert kept.changes()  # the step is found: the search went the whole way
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_the_change_points_search_takes_a_few_doubles_a_point():
    searched(POINTS // 4)
    assert searched(2 * POINTS) - searched(POINTS) <= SEARCH_PER_POINT * POINTS
