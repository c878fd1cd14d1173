"""`optseq runs --json` keeps a few dozen bytes a run for the change points it writes last, not the runs: over
stores the store bench's builder wrote (real runs through the real API), the memory tracemalloc sees kept and at
its peak grows with N by a small per-run bound from N to 2N runs. Counted bytes, not time or RSS: the verdict is
the same on a loaded machine."""
from __future__ import annotations

import contextlib
import gc
import io
import tracemalloc
from pathlib import Path

import pytest

from optseq.console.commands.runs_cmd import print_runs
from optseq.state.bench.store_build import build_store
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runs_json_memory")]

N = 150
KEPT_PER_RUN = 128
"""Bytes a run may add to what the runs section leaves kept: a Kept's arrays take about 40 (and their
over-allocation); a dict of each run's fields took about 1,600."""
PEAK_PER_RUN = 700
"""Bytes a run may add to the peak, the change points' search over a lever's whole history included (about 440
a point today, for its lists of logs, weights and sums); a dict a run kept took the peak up by about 1,700."""


class Sink(io.TextIOBase):
    """stdout for print_runs: keeps no text, notes the traced memory as the runs section ends."""

    def __init__(self) -> None:
        self.kept: int | None = None

    def write(self, text: str) -> int:
        if self.kept is None and '"decisions": [' in text:
            # what is kept, not the garbage waiting for the cyclic collector (json's encoder leaves a cycle a
            # record): when that last ran depends on the allocations before, not on what print_runs keeps
            gc.collect()
            self.kept = tracemalloc.get_traced_memory()[0]
        return len(text)


def traced(db: Path) -> tuple[int, int]:
    """(kept as the runs are written, peak) in bytes over what was traced before print_runs began."""
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
    assert sink.kept is not None
    return sink.kept - before, peak - before


def test_runs_json_keeps_a_few_dozen_bytes_a_run(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    build_store(DEFAULT_PLAN, small, N)
    build_store(DEFAULT_PLAN, large, 2 * N)
    traced(small)  # the lazy imports and the decoders' caches, once, outside the figures
    (kept_n, peak_n), (kept_2n, peak_2n) = traced(small), traced(large)
    assert kept_2n - kept_n <= KEPT_PER_RUN * N, (kept_n, kept_2n)
    assert peak_2n - peak_n <= PEAK_PER_RUN * N, (peak_n, peak_2n)
