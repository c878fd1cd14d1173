"""The change-point detector (state/runs/change_points.py) and a lever's changes in terms of its runs
(state/runs/lever_changes.py): a step is found near its run, a history without one gets none, and each run
counts by its interval."""
from __future__ import annotations

import math
import random

import pytest

from optseq.state.lifecycle.history_points import measured_at
from optseq.state.lifecycle.run_index import RunIndex
from optseq.state.runs import change_points
from optseq.state.runs.lever_changes import change_text, changes


def history(n: int, step_at: int | None, drop: float, se: float, seed: int, run_sd: float = 0.0):
    """(estimates, lows, highs): log ratios normal around 1.3× (× (1 − drop) from `step_at` on), each with the
    95% interval its standard error `se` gives; `run_sd` a spread beyond what the intervals say."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        true = math.log(1.3) + (math.log(1 - drop) if step_at is not None and i >= step_at else 0.0)
        y = true + rng.gauss(0.0, se) + rng.gauss(0.0, run_sd)
        out.append((math.exp(y), math.exp(y - 1.96 * se), math.exp(y + 1.96 * se)))
    return [list(c) for c in zip(*out)]


@pytest.mark.parametrize("seed", range(5))
def test_a_step_is_found_at_its_run(seed):
    at = 10 + 5 * seed
    found = change_points.find(*history(50, at, 0.2, 0.02, seed))
    assert len(found) == 1
    (shift,) = found
    assert abs(shift.at - at) <= 2
    assert shift.before == pytest.approx(1.3, rel=0.03) and shift.after == pytest.approx(1.04, rel=0.03)
    assert shift.z < 0


@pytest.mark.parametrize("seed", range(10))
def test_a_history_without_a_step_has_none(seed):
    assert change_points.find(*history(50, None, 0.0, 0.02, seed)) == []


def test_a_step_near_the_end_is_found():
    # the newest runs are the ones a team asks about: two runs at the new level are enough for a big step
    (shift,) = change_points.find(*history(30, 28, 0.2, 0.02, 7))
    assert shift.at == 28


def test_runs_count_by_their_intervals():
    # three runs far off the line with intervals wider than the gap: weighed, nothing moved; read as exact ratios,
    # the same numbers make a change (what the weighing is for)
    estimates, lows, highs = history(20, None, 0.0, 0.01, 3)
    for i in (10, 11, 12):
        estimates[i], lows[i], highs[i] = 1.0, 1.0 * math.exp(-1.96 * 0.5), 1.0 * math.exp(1.96 * 0.5)
    assert change_points.find(estimates, lows, highs) == []
    narrow = [e * math.exp(-1.96 * 0.01) for e in estimates], [e * math.exp(1.96 * 0.01) for e in estimates]
    assert change_points.find(estimates, *narrow) != []


def test_a_spread_the_intervals_do_not_explain_makes_no_change():
    # each run 3% off with intervals of 0.5%: read as exact, every run would differ from the next; the run-to-run
    # variance estimated from successive differences absorbs it
    estimates, lows, highs = history(50, None, 0.0, 0.005, 11, run_sd=0.03)
    ses = change_points.standard_errors(estimates, lows, highs)
    tau2 = change_points.extra_variance([math.log(e) for e in estimates], ses)
    assert 0.02 ** 2 < tau2 < 0.045 ** 2
    assert change_points.find(estimates, lows, highs) == []


def test_runs_without_intervals():
    estimates, lows, highs = history(30, 15, 0.2, 0.02, 5)
    assert [s.at for s in change_points.find(estimates, [None] * 30, [None] * 30)] == [15]
    # one run without an interval counts as the least certain of the others, never as an exact one
    lows[3] = highs[3] = None
    ses = change_points.standard_errors(estimates, lows, highs)
    assert ses[3] == max(ses)


def test_too_few_runs_and_a_flat_history():
    assert change_points.find([1.3, 1.0, 1.0]) == []
    assert change_points.find([1.3] * 10, [1.3] * 10, [1.3] * 10) == []


@pytest.mark.parametrize("n", [6, 12, 200])
def test_the_penalty_holds_its_level_at_other_lengths(n):
    # exact intervals, no change: the penalty is fitted to the 99th percentile of the largest split gain, so at most
    # about 1% of such histories get a change, short or long (6 of 300 allowed for the draw's own spread)
    false = sum(bool(change_points.find(*history(n, None, 0.0, 0.02, seed))) for seed in range(300))
    assert false <= 6
    assert change_points.penalty(4) < change_points.penalty(50) < change_points.penalty(1000) < 15


def _runs(estimates, lows, highs, on=lambda i: {}):
    return [{"id": i + 1, "lever": "amp", "status": "succeeded",
             "summary": {"stats": {"estimate": e, "ci_low": lo, "ci_high": hi}}, **({"on": on(i)} if on(i) else {})}
            for i, (e, lo, hi) in enumerate(zip(estimates, lows, highs))]


def test_a_change_names_its_runs_and_the_commits_around_it():
    runs = _runs(*history(20, 12, 0.2, 0.02, 1), on=lambda i: {"commit": f"{i:02d}" + "a" * 38, "device": "gpu0"})
    runs.insert(5, {"id": 100, "lever": "amp", "status": "failed"})  # a failed run has no point and moves nothing
    runs[5]["id"] = 6  # in id order among the others
    for k, r in enumerate(runs[6:], 7):
        r["id"] = k
    (change,) = changes(runs)
    assert change.run == 14 and change.previous == 13
    assert change_text(change, 4) == (f"change at run 14: {change.before:.2f}× → {change.after:.2f}×, between "
                                      "commits 11aaaaa..12aaaaa, 4 commits: git log 11aaaaa..12aaaaa")
    assert change_text(change, brief=True).endswith(", commits 11aaaaa..12aaaaa")
    assert change.before == pytest.approx(1.3, rel=0.03) and change.after == pytest.approx(1.04, rel=0.03)


def test_what_else_differs_across_a_change():
    def on(i):
        return {"commit": "c" * 40, "device": "cpu" if i < 12 else "gpu"}

    (change,) = changes(_runs(*history(20, 12, 0.2, 0.02, 1), on=on))
    assert change_text(change).endswith(", at commit ccccccc on both sides; device cpu → gpu")
    (change,) = changes(_runs(*history(20, 12, 0.2, 0.02, 1)))
    assert change_text(change).endswith(", no commit recorded")


def test_measured_at_a_plain_and_a_branch_lever():
    plain = {"fingerprint": {"device": "cpu", "repo": {"root": "/r", "head": "h" * 40, "diff": "abc"}}}
    branch = {"fingerprint": {"device": "gpu", "repo": None,
                              "code": {"repo": "/r", "baseline": {"ref": "main", "commit": "b" * 40},
                                       "candidate": {"ref": "fast", "commit": "f" * 40}}}}
    assert measured_at(plain) == {"commit": "h" * 40, "dirty": True, "device": "cpu"}
    assert measured_at(branch) == {"commit": "f" * 40, "base": "b" * 40, "device": "gpu"}
    assert measured_at({"id": 3}) == {}


def test_the_machine_keeps_each_runs_commit_and_an_old_snapshot_still_loads():
    index = RunIndex()
    record = {"id": 1, "lever": "amp", "status": "succeeded", "summary": {"stats": {"estimate": 1.2}},
              "fingerprint": {"device": "cpu", "repo": {"root": "/r", "head": "a" * 40, "diff": ""}}}
    index.started({**record, "status": "running"})
    index.ended(record)
    assert index.recent["amp"][0].on == {"commit": "a" * 40, "device": "cpu"}
    old = index.to_dict()
    del old["recent"]["amp"][0]["on"]
    assert RunIndex.from_dict(old).recent["amp"][0].on is None
    assert measured_at(RunIndex.from_dict(old).recent["amp"][0].stored) == {}


def test_the_binary_segmentation_is_ruptures_step_for_step():
    """The detector's own search splits exactly where ruptures' Binseg (jump 1) does under the same weighted cost,
    on steps, flat histories, rounded values (ties) and penalties from tiny to large."""
    np = pytest.importorskip("numpy")
    ruptures = pytest.importorskip("ruptures")
    from ruptures.base import BaseCost

    class WeightedL2(BaseCost):
        model, min_size = "weighted_l2", change_points.MIN_SIZE

        def __init__(self, weights):
            self.weights = np.asarray(weights, dtype=float)

        def fit(self, signal):
            y, w = np.asarray(signal, dtype=float), self.weights
            self.signal = y.reshape(-1, 1)
            self.sums = [np.concatenate(([0.0], np.cumsum(part))) for part in (w, w * y, w * y * y)]
            return self

        def error(self, start, end):
            s0, s1, s2 = (s[end] - s[start] for s in self.sums)
            return max(float(s2 - s1 * s1 / s0), 0.0)

    rng = random.Random(20261206)
    splits = 0
    for _ in range(400):
        n = rng.randint(4, 60)
        at, step = rng.randint(1, n - 1), rng.choice([0.0, 0.05, 0.2])
        logs = [rng.gauss(0.0, rng.choice([0.01, 0.05])) + (step if i >= at else 0.0) for i in range(n)]
        if rng.random() < 0.3:
            logs = [round(y, 2) for y in logs]
        weights = [1.0 / rng.choice([0.01, 0.02, 0.05]) ** 2 for _ in range(n)]
        pen = rng.choice([change_points.penalty(n), 0.1, 1.0, 30.0])
        theirs = ruptures.Binseg(custom_cost=WeightedL2(weights), min_size=change_points.MIN_SIZE, jump=1)
        expected = [int(b) for b in theirs.fit(np.asarray(logs)).predict(pen=pen)[:-1]]
        assert change_points._segment(logs, weights, pen) == expected, (logs, weights, pen)
        splits += len(expected)
    assert splits > 100  # the draws split often, not only the trivial no-split case


def test_finding_change_points_imports_neither_numpy_nor_a_library():
    import subprocess
    import sys

    code = ("import sys; from optseq.state.runs import change_points as c; "
            "print(c.find([1.3] * 6 + [1.0] * 6, [1.28] * 6 + [0.98] * 6, [1.32] * 6 + [1.02] * 6)[0].at, "
            "'numpy' in sys.modules, 'ruptures' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["6", "False", "False"]
