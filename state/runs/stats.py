"""Statistics over a run's raw `sample` events: paired A/B ratios with sequential bounds, per-arm medians."""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SEED = 20240917
"""Seed of every bootstrap, so the same samples always give the same interval."""
N_RESAMPLES = 9999
CONFIDENCE = 0.95
MIN_PAIRS = 3
"""Below this many values a CI or a p-value says nothing; both stay None."""
BASELINE, CANDIDATE = "baseline", "candidate"


class StatsError(ValueError):
    """Samples that cannot be used; str() is one line naming the sample and the problem."""


@dataclass(frozen=True)
class PairedStats:
    """Candidate vs baseline on one metric; every ratio is oriented so that > 1 means the candidate is better."""

    metric: str
    n: int
    """Complete pairs counted (optseq.state.runs.pairs decides which count)."""
    estimate: float | None
    """Median of the per-pair ratios; None without pairs."""
    ci_low: float | None
    ci_high: float | None
    """Sequential 95% bounds of the median ratio, one per side, valid over every look (optseq.state.runs.sequential);
    None while too few pairs can decide anything."""
    p_value: float | None
    """One-sided sequential p-value against the threshold, in the direction of the estimate; None without one."""
    higher_is_better: bool
    ratios: tuple[float, ...]
    """Per-pair ratios in the order they came."""
    unit: str = ""
    dropped: int = 0
    """Samples of this metric not counted: halves without a partner, duplicates, replays, bad values."""
    looks: tuple[int, ...] = ()
    """Cumulative pairs at each look (one per pass that added pairs)."""
    needed: int | None = None
    """Pairs that must lie on one side of the threshold at this look to decide; None without pairs."""
    budget: int | None = None
    """The pair budget the looks are spent over (the rule's max_repeats)."""
    above: int | None = None
    below: int | None = None
    """Pairs above and below the threshold, when one was given."""

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "n": self.n, "estimate": self.estimate, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "p_value": self.p_value, "higher_is_better": self.higher_is_better,
                "ratios": list(self.ratios), "unit": self.unit, "dropped": self.dropped, "looks": list(self.looks),
                "needed": self.needed, "budget": self.budget, "above": self.above, "below": self.below,
                "method": "sequential sign test"}


@dataclass(frozen=True)
class ArmStats:
    """One arm (config) on one metric: the median of its values, with a bootstrap CI from MIN_PAIRS values on."""

    arm: str
    metric: str
    n: int
    median: float
    ci_low: float | None
    ci_high: float | None
    higher_is_better: bool
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "median": self.median, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "higher_is_better": self.higher_is_better, "unit": self.unit}


@dataclass(frozen=True)
class ArmsTable:
    """Per-arm, per-metric statistics of a multi-arm experiment; arms keep the order they first appeared in."""

    arms: tuple[str, ...]
    rows: tuple[ArmStats, ...]

    def get(self, arm: str, metric: str) -> ArmStats | None:
        return next((r for r in self.rows if r.arm == arm and r.metric == metric), None)

    def to_dict(self) -> dict[str, dict[str, dict[str, Any]]]:
        """`{arm: {metric: {n, median, ci_low, ci_high, higher_is_better, unit}}}`."""
        out: dict[str, dict[str, dict[str, Any]]] = {arm: {} for arm in self.arms}
        for row in self.rows:
            out[row.arm][row.metric] = row.to_dict()
        return out


def paired(samples: Iterable[Mapping[str, Any]], metric: str, *, budget: int | None = None,
           threshold: float | None = None) -> PairedStats:
    """Pair baseline and candidate samples of `metric` pass by pass (the `run` tag) and bound the median ratio.

    Each pass that adds pairs is a look; `budget` is the pair budget the looks spend their error over
    (default: the pairs there are, i.e. a single planned look). With `threshold` the counts on each
    side of it and a sequential p-value are given too.
    """
    from optseq.state.runs.pairs import book

    counted = book(samples, metric)
    return summarise(counted, budget=budget, threshold=threshold)


def summarise(counted, *, budget: int | None = None, threshold: float | None = None,
              extra: Iterable = ()) -> PairedStats:
    """PairedStats of a PairBook; `extra` pairs of a pass under way count as one more look (live display)."""
    from optseq.state.runs import sequential

    extra = list(extra)
    ratios = counted.ratios(extra)
    higher = counted.higher_is_better is not False
    looks = tuple(counted.looks) + ((len(ratios),) if extra else ())
    n = len(ratios)
    if n == 0:
        return PairedStats(counted.metric, 0, None, None, None, None, higher, (), counted.unit, counted.dropped)
    import numpy as np

    plan = sequential.design(looks, budget or looks[-1])
    low, high = sequential.bounds(ratios, plan)
    above = below = p_value = None
    if threshold is not None:
        above = sum(r > threshold for r in ratios)
        below = sum(r < threshold for r in ratios)
        p_value = plan.p_value(above if float(np.median(ratios)) >= threshold else below)
    return PairedStats(counted.metric, n, float(np.median(ratios)), low, high, p_value, higher,
                       tuple(float(r) for r in ratios), counted.unit, counted.dropped, looks,
                       plan.needed[-1], plan.budget, above, below)


def arms(samples: Iterable[Mapping[str, Any]], rule=None) -> ArmsTable:
    """Median and CI per arm and metric; with a `Rule`, only the metrics it reads (metric, choose, cost)."""
    wanted = None
    if rule is not None:
        wanted = {rule.metric}
        if rule.choose:
            wanted.add(rule.choose.partition(":")[2])
        if rule.cost_metric:
            wanted.add(rule.cost_metric)
    values: dict[tuple[str, str], list[float]] = {}
    orient: dict[str, tuple[bool | None, str]] = {}
    order: list[str] = []
    for i, s in enumerate(samples):
        metric = sample_field(s, "metric", i, str)
        if wanted is not None and metric not in wanted:
            continue
        arm = sample_field(s, "arm", i, str)
        value = sample_value(s, i)
        orient[metric] = sample_orientation(s, i, metric, *orient.get(metric, (None, "")))
        if not math.isfinite(value):
            continue
        if arm not in order:
            order.append(arm)
        values.setdefault((arm, metric), []).append(value)
    rows = []
    import numpy as np

    for arm in order:
        for metric in sorted(m for a, m in values if a == arm):
            data = np.asarray(values[(arm, metric)], dtype=float)
            lo = hi = None
            if len(data) >= MIN_PAIRS:
                lo, hi = median_ci(data)
            higher, unit = orient[metric]
            rows.append(ArmStats(arm, metric, len(data), float(np.median(data)), lo, hi, bool(higher), unit))
    return ArmsTable(tuple(order), tuple(rows))


def median_ci(data) -> tuple[float, float]:
    """95% bootstrap CI of the median: BCa, or percentile where BCa is degenerate (e.g. all values equal)."""
    import numpy as np
    from scipy import stats

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # BCa on tied data warns and returns NaN; the percentile retry below is the answer to that.
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((data,), np.median, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                                 method=method, rng=np.random.default_rng(SEED)).confidence_interval
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            return float(ci.low), float(ci.high)
    # Percentile can only fail when every resample is identical: the data are one value.
    value = float(np.median(data))
    return value, value


def sample_field(s: Mapping[str, Any], key: str, i: int, kind: type):
    if not isinstance(s, Mapping):
        raise StatsError(f"sample #{i}: expected an object, got {type(s).__name__}")
    if key not in s:
        raise StatsError(f"sample #{i}: missing {key!r}")
    value = s[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        name = "a number" if isinstance(kind, tuple) else {str: "a string", int: "an integer", bool: "true or false"}[kind]
        raise StatsError(f"sample #{i}: {key!r} should be {name}, got {value!r}")
    return value


def sample_value(s: Mapping[str, Any], i: int) -> float:
    value = sample_field(s, "value", i, (int, float))
    return float(value)


def sample_orientation(s: Mapping[str, Any], i: int, metric: str, seen: bool | None, unit: str) -> tuple[bool, str]:
    """The metric's direction and unit; every sample of one metric must agree on the direction."""
    higher = sample_field(s, "higher_is_better", i, bool)
    if seen is not None and higher != seen:
        raise StatsError(f"sample #{i}: {metric} has higher_is_better={higher}, earlier samples say {seen}")
    return higher, unit or str(s.get("unit") or "")
