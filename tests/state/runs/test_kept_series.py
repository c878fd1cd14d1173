"""lever_changes.Kept, the compact series `runs --json` keeps a lever's runs in, finds the change points the
detector finds over the same runs as plain lists: ids out of order, runs without bounds (NaN in its arrays, None
to the detector) and runs without an estimate included."""
from __future__ import annotations

import random

from optseq.state.runs import change_points
from optseq.state.runs.lever_changes import Kept, changes
from tests.state.runs.test_change_points import history


def runs_of(seed: int) -> list[dict]:
    """A lever's 60 runs as the store keeps them, a 20% step at the 31st; every seventh without an interval,
    a failed run between, commits and devices shared by many."""
    estimates, lows, highs = history(60, 30, 0.2, 0.02, seed)
    runs = []
    for i, (estimate, low, high) in enumerate(zip(estimates, lows, highs)):
        stats = {"estimate": estimate} if i % 7 == 3 else {"estimate": estimate, "ci_low": low, "ci_high": high}
        runs.append({"id": 2 * i + 1, "lever": "fast", "summary": {"stats": stats},
                     "infra": {"adopted": ["amp"] if i >= 20 else []},
                     "fingerprint": {"repo": {"root": "/repo", "head": f"{i // 10:040x}"}, "device": "cpu"}})
        runs.append({"id": 2 * i + 2, "lever": "fast", "status": "failed"})
    random.Random(seed).shuffle(runs)  # a merged store (optseq sync) need not give them in id order
    return runs


def test_kept_finds_what_the_detector_finds_over_lists():
    for seed in range(4):
        runs = runs_of(seed)
        kept = Kept()
        for run in runs:
            kept.add(run)
        # the reference: the runs with an estimate in id order, their bounds as lists with None where none
        ordered = sorted((r for r in runs if "summary" in r), key=lambda r: r["id"])
        stats = [r["summary"]["stats"] for r in ordered]
        shifts = change_points.find([s["estimate"] for s in stats], [s.get("ci_low") for s in stats],
                                    [s.get("ci_high") for s in stats])
        assert shifts, seed
        found = kept.changes()
        assert [(c.previous, c.run, c.before, c.after) for c in found] == [
            (ordered[s.at - 1]["id"], ordered[s.at]["id"], s.before, s.after) for s in shifts]
        assert found == changes(runs)  # the runs as dicts (runs LEVER, the plot, the export) go the same way
        for change in found:
            assert change.old == {"commit": f"{(change.previous - 1) // 20:040x}", "device": "cpu"}
            assert change.root == "/repo"


def test_a_spilled_kept_finds_what_one_in_memory_finds():
    """`runs --json` spills each lever's series to a file CHUNK runs at a time and reads back what the search
    needs: the same changes, runs out of id order and from two testbeds included."""
    import tempfile

    from optseq.state.runs.lever_changes import CHUNK

    estimates, lows, highs = history(7 * CHUNK + 5, 4 * CHUNK, 0.2, 0.02, 3, run_sd=0.01)
    runs = [{"id": i + 1, "lever": "fast", "testbed": {"name": "a" if i % 3 else "b"},
             "summary": {"stats": {"estimate": e} if i % 7 == 3 else {"estimate": e, "ci_low": lo, "ci_high": hi}},
             "fingerprint": {"repo": {"root": "/repo", "head": f"{i // 50:040x}"}}}
            for i, (e, lo, hi) in enumerate(zip(estimates, lows, highs))]
    for order in (runs, runs[CHUNK:] + runs[:CHUNK]):
        with tempfile.TemporaryFile() as spill:
            kept, held = Kept(spill), Kept()
            for run in order:
                kept.add(run)
                held.add(run)
            assert spill.seek(0, 2) > 0  # chunks went to the file
            found = kept.changes()
            assert found and found == held.changes() == changes(order)
            assert [kept.column(k).tobytes() for k in range(4)] == [held.column(k).tobytes() for k in range(4)]
