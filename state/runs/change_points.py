"""Change points in a series of measured ratios: where a lever's runs moved to another level, each run weighed by
its interval. A hint of where to look (the commits around it), never a decision: that is each run's paired test.

The detector is binary segmentation (ruptures' Binseg, Scott & Knott's split-the-best-then-recurse, the
hierarchical search E-Divisive means also makes, written out here) on the runs' log ratios with a Gaussian cost whose variances
are the runs' own: a run with a narrow interval counts for more than one with a wide interval, and a split
gains what a likelihood-ratio test of "one level" against "two levels" would. Three guards keep a noisy
history from producing one:

* the variance of a run is its interval's plus the run-to-run spread its interval does not explain
  (`extra_variance`, from successive differences, which a step moves once and a median ignores);
* a split is made only when its gain clears `penalty(n)`, the 99th percentile of the largest gain in an
  n-run history without a change whose intervals are exact (simulated; `python -m
  optseq.state.bench.change_points` measures the false rate it gives);
* every change found is confirmed by the two-sample test of the level before against the level after, each
  side's variance scaled up by the scatter it shows beyond its intervals (its Birge ratio), which must clear
  the same penalty; the weakest change that fails is dropped and the rest tested again.

Plain Python, no cache: the search costs O(n) sums per split (about 40 ms for 10,000 runs), less than importing
numpy and scipy, which a detector from a library would bring into every export.
"""
from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Sequence


MIN_SIZE = 2
"""Runs on each side of a change: a single run off the line is an outlier until the next run agrees."""
Z95 = 1.959963984540054
"""A 95% interval's half-width in standard errors."""
MIN_SE = 1e-3
"""The standard error of a run whose interval is a point (every launch measured the same rounded ratio): no
bench resolves a ratio finer than 0.1%, and a zero would give that run all the weight."""
TRIM = 0.9
"""The share of successive differences the run-to-run variance is estimated from, the smallest."""
TRIMMED_CHI2_1 = 0.6230154841346819
"""The mean of a chi-square with one degree of freedom below its 90th percentile (2.7055): of d²/var(d) for a
difference of two normal runs, its largest tenth left out. P(χ²₃ < 2.7055) / 0.9, as x·f₁(x) = f₃(x)."""
LEVEL = 0.01
"""The false change points a history without a change gets, at most, when its runs' intervals are exact."""
BLOCK = 2048
"""Values sorted at a time by `_sorted_batches`: a sorted list holds a float object and a pointer a value (40 bytes),
an array 8."""


@dataclass(frozen=True)
class Shift:
    """One change point: the ratio moved from `before` to `after` between points `at` − 1 and `at`."""

    at: int
    """Index of the first point after the change."""
    before: float
    after: float
    """The weighted geometric mean ratio of the level before and of the level after (each up to the next change)."""
    z: float
    """The confirming test's statistic: the levels' difference in standard errors (signed, after − before)."""


def penalty(n: int) -> float:
    """The gain a split of an n-run history must clear: 6.0 + 4.2·log(log n), fitted to the 99th percentile
    of the largest split gain in simulated histories without a change whose intervals are exact (6.7 at
    4 runs, 9.5 at 10, 11.5 at 50, 13.8 at 1,000, 14.8 at 3,000), rounded up where the fit fell below."""
    return 6.0 + 4.2 * math.log(math.log(max(n, 4)))


def interval_se(low: float | None, high: float | None) -> float:
    """A run's standard error of its log ratio from its 95% interval ((log high − log low) / 2·1.96, never below
    MIN_SE); NaN where it has no interval (a bound missing, NaN, or out of order)."""
    if low is None or high is None or not (0 < low <= high):
        return math.nan
    return max((math.log(high) - math.log(low)) / (2 * Z95), MIN_SE)


def standard_errors(estimates: Sequence[float], lows: Sequence[float | None],
                    highs: Sequence[float | None]) -> list[float]:
    """Each run's standard error of its log ratio, from its 95% interval (interval_se), never below the history's
    median one.

    The floor: an interval bounded by a few launches is itself a noisy measure of its run's precision (the
    sign test's bounds are order statistics of six launches), so one narrower than the history's typical
    interval is taken at the typical width; a wider one counts as it is. Without it, the one run whose six
    launches happened to agree outweighs ten others, and a history without a change gets one where it sits
    (about one quiet simulated history in ten did, in the bench's trials before the floor).
    A run without an interval (stopped before its test had enough launches to bound anything, or stored
    before intervals were) counts as the least certain run that has one: it knows no more than any of them.
    When no run has one, every run gets the spread the history itself shows from run to run.
    """
    ses = array("d", (interval_se(low, high) for _, low, high in zip(estimates, lows, highs)))
    return list(_floored(ses, array("d", (math.log(e) for e in islice(estimates, len(ses))))))


def _floored(ses: array, logs: Sequence[float]) -> array:
    """standard_errors over each run's interval_se, in place: the array is a history's whole length, so no
    list of its floats is made."""
    known = sum(1 for se in ses if se == se)  # NaN is no interval
    if not known:
        spread = max(_spread(logs), MIN_SE)
        for i in range(len(ses)):
            ses[i] = spread
        return ses
    typical, fill = _median((se for se in ses if se == se), known), max(se for se in ses if se == se)
    for i, se in enumerate(ses):
        ses[i] = fill if se != se else max(se, typical)
    return ses


def extra_variance(logs: Sequence[float], ses: Sequence[float]) -> float:
    """The run-to-run variance the intervals do not explain (a machine's day, a driver), as a variance added
    to every run's: the τ² that makes the mean of d²/(se₁² + se₂² + 2τ²) over successive differences d, its
    largest tenth left out, what it is for normal noise (TRIMMED_CHI2_1). 0 when the intervals explain the
    spread or more (a sequential interval is wider than the spread it bounds). A step moves one difference,
    which the trimming leaves out; a median would too, but estimates τ² from 49 differences about half as
    well, and a τ² estimated low lets a noisy history through."""
    # in arrays, as the search's sums: a history of 30,000 runs held as tuples of floats took 4 MB more
    d2s = array("d", ((logs[i + 1] - logs[i]) ** 2 for i in range(len(logs) - 1)))
    vs = array("d", (ses[i] * ses[i] + ses[i + 1] * ses[i + 1] for i in range(len(d2s))))
    if not d2s:
        return 0.0
    kept = max(1, math.ceil(TRIM * len(d2s)))

    def trimmed(tau2: float) -> float:
        return _smallest_sum((d2 / (v + 2 * tau2) for d2, v in zip(d2s, vs)), kept) / kept

    if trimmed(0.0) <= TRIMMED_CHI2_1:
        return 0.0
    low, high = 0.0, max(d2s)
    for _ in range(60):  # bisection: the trimmed mean falls as τ² grows
        mid = (low + high) / 2
        low, high = (mid, high) if trimmed(mid) > TRIMMED_CHI2_1 else (low, mid)
    return high


def find(estimates: Sequence[float], lows: Sequence[float | None] | None = None,
         highs: Sequence[float | None] | None = None) -> list[Shift]:
    """The change points of a series of positive ratios in time order, each with its interval (None where a
    run has none, or NaN: either is no interval); [] for fewer than 2·MIN_SIZE runs, where no change can have two
    runs on each side."""
    n = len(estimates)
    if n < 2 * MIN_SIZE:
        return []
    lows = lows if lows is not None else [None] * n
    highs = highs if highs is not None else [None] * n
    ses = array("d", (interval_se(low, high) for _, low, high in zip(estimates, lows, highs)))
    return find_logs(array("d", (math.log(e) for e in islice(estimates, len(ses)))), ses)


def find_logs(logs: array, ses: array) -> list[Shift]:
    """find, over the runs' log ratios and their interval_se (NaN where none), each an array of doubles: the
    same numbers as floats in lists at a fifth of the memory (`runs --json` searches a lever's 30,000 runs).
    `ses` is the search's scratch: it holds the runs' weights when this returns."""
    n = len(logs)
    if n < 2 * MIN_SIZE:
        return []
    tau2 = extra_variance(logs, _floored(ses, logs))
    for i, se in enumerate(ses):
        ses[i] = 1.0 / (se * se + tau2)
    bounds = _segment(logs, ses, penalty(n))
    return _confirmed(logs, ses, bounds, penalty(n))


def _segment(logs: Sequence[float], weights: Sequence[float], pen: float) -> list[int]:
    """Binary segmentation under the weighted cost: split the segment whose best split gains most, while that gain
    clears `pen`; the change indexes, ascending. It is ruptures' Binseg (jump 1) step for step, ties included, in
    plain Python over the cumulative sums: a lever's history is hundreds of runs, where numpy and scipy's second
    of imports cost more than the search."""
    s0, s1, s2 = array("d", [0.0]), array("d", [0.0]), array("d", [0.0])
    for w, y in zip(weights, logs):  # left to right, as numpy's cumsum adds: the same sums to the last bit
        s0.append(s0[-1] + w)
        s1.append(s1[-1] + w * y)
        s2.append(s2[-1] + w * y * y)

    def error(start: int, end: int) -> float:
        """A segment's Σ w·(y − ȳ_w)², the weighted mean's residual sum of squares."""
        total = s0[end] - s0[start]
        moment = s1[end] - s1[start]
        return max(s2[end] - s2[start] - moment * moment / total, 0.0)

    best: dict[tuple[int, int], tuple[int | None, float]] = {}

    def single(start: int, end: int) -> tuple[int | None, float]:
        if (start, end) not in best:
            whole = error(start, end)
            top: tuple[float, int] | None = None  # max() over (gain, at) without the list: a later one wins if >
            for at in range(start + MIN_SIZE, end - MIN_SIZE + 1):
                gain_at = (whole - error(start, at) - error(at, end), at)
                if top is None or gain_at > top:
                    top = gain_at
            best[start, end] = (None, 0.0) if top is None else (top[1], top[0])
        return best[start, end]

    bounds = [len(logs)]
    while True:
        at, gain = max((single(a, b) for a, b in zip([0, *bounds], bounds)), key=lambda found: found[1])
        if at is None or not gain > pen:
            return bounds[:-1]
        bounds = sorted([*bounds, at])


def _confirmed(logs: array, weights: array, bounds: list[int], pen: float) -> list[Shift]:
    """The changes whose levels differ by the confirming test; the weakest that fails goes first, then the rest
    are tested again against the levels its removal joins."""
    bounds = list(bounds)
    ys, ws = memoryview(logs), memoryview(weights)  # a level's runs in place, not copied
    while True:
        edges = [0, *bounds, len(logs)]
        levels = [_level(ys[a:b], ws[a:b]) for a, b in zip(edges, edges[1:])]
        tests = []
        for i, at in enumerate(bounds):
            (m1, v1), (m2, v2) = levels[i], levels[i + 1]
            tests.append((m2 - m1) / math.sqrt(v1 + v2))
        weakest = min(range(len(tests)), key=lambda i: abs(tests[i]), default=None)
        if weakest is None or tests[weakest] ** 2 >= pen:
            return [Shift(at, math.exp(levels[i][0]), math.exp(levels[i + 1][0]), tests[i])
                    for i, at in enumerate(bounds)]
        del bounds[weakest]


def _level(logs: Sequence[float], weights: Sequence[float]) -> tuple[float, float]:
    """A level's weighted mean and that mean's variance, scaled up by its Birge ratio (the scatter of its runs
    around the mean over what their variances allow) where that is above 1, never down."""
    total = sum(weights)
    mean = sum(w * y for w, y in zip(weights, logs)) / total
    birge = sum(w * (y - mean) ** 2 for w, y in zip(weights, logs)) / (len(logs) - 1) if len(logs) > 1 else 1.0
    return mean, max(1.0, birge) / total


def _spread(logs: Sequence[float]) -> float:
    """The run-to-run standard deviation from successive differences (median absolute difference over
    0.6745·√2): what a history says of its own noise, a step among its runs moving one difference."""
    n = len(logs) - 1
    diffs = (abs(logs[i + 1] - logs[i]) for i in range(n))
    return _median(diffs, n) / (0.6744897501960817 * math.sqrt(2)) if n > 0 else 0.0


def _median(values: Iterable[float], n: int | None = None) -> float:
    """The median of `values` (n of them, where given: an iterable read once)."""
    if n is None:
        values = list(values)
        n = len(values)
    at, wanted = n // 2 - 1 + n % 2, 2 - n % 2  # the middle value, or the two
    middle: list[float] = []
    for batch in _sorted_batches(values):
        if at < len(batch):
            middle += batch[at:at + wanted - len(middle)]
            if len(middle) == wanted:
                break
            at = 0
        else:
            at -= len(batch)
    return middle[0] if n % 2 else (middle[0] + middle[1]) / 2


def _smallest_sum(values: Iterable[float], k: int) -> float:
    """sum(sorted(values)[:k]), to the last bit: the same additions in the same order (a float `start` goes on
    adding as one sum() would)."""
    total: float = 0
    for batch in _sorted_batches(values):
        if k <= len(batch):
            return sum(batch[:k], total)
        total, k = sum(batch, total), k - len(batch)
    return total


def _sorted_batches(values: Iterable[float]) -> Iterator[list[float]]:
    """sorted(values) in lists one after the other; past BLOCK values, held meanwhile in one array of doubles,
    sorted BLOCK at a time and merged (a history's whole length as a list of floats is five times the bytes): each
    batch is every value up to the least of the sorted runs' next `step`-th (about BLOCK values)."""
    source = iter(values)
    block = sorted(islice(source, BLOCK))
    if len(block) < BLOCK:
        yield block
        return
    held = array("d", block)
    while block := sorted(islice(source, BLOCK)):
        held.extend(block)
    view = memoryview(held)
    runs = [[at, min(at + BLOCK, len(view))] for at in range(0, len(view), BLOCK)]
    step = max(16, BLOCK // len(runs))
    while runs:
        pivot = min(view[min(at + step, end) - 1] for at, end in runs)
        batch: list[float] = []
        for run in runs:
            upto = bisect_right(view, pivot, run[0], run[1])
            batch.extend(view[run[0]:upto])
            run[0] = upto
        batch.sort()
        yield batch
        runs = [run for run in runs if run[0] < run[1]]
