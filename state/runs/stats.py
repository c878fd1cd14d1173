"""Statistics over a run's raw `sample` events: paired A/B ratios with sequential bounds, per-arm medians."""
from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optseq.state.record_types import Stats

SEED = 20240917
"""Seed of every bootstrap, so the same samples always give the same interval."""
N_RESAMPLES = 9999
CONFIDENCE = 0.95
MIN_PAIRS = 3
"""Below this many values a CI or a p-value says nothing; both stay None."""
BASELINE, CANDIDATE = "baseline", "candidate"
UNITS = {"launch": "launches", "pair": "pairs"}
"""What the sign test counts, in the plural its texts use."""


def count_text(n: int, replicate: str) -> str:
    """`1 launch`, `6 launches`, `1 pair`: a count of the sign test's units."""
    return f"{n} {replicate if n == 1 else UNITS[replicate]}"


class StatsError(ValueError):
    """Samples that cannot be used; str() is one line naming the sample and the problem."""


@dataclass(frozen=True)
class PairedStats:
    """Candidate vs baseline on one metric; every ratio is oriented so that > 1 means the candidate is better."""

    metric: str
    n: int
    """Complete pairs counted (optseq.state.runs.pairs decides which count)."""
    estimate: float | None
    """Median of the units' ratios (a launch's: the median of its pairs'); None without pairs."""
    ci_low: float | None
    ci_high: float | None
    """Sequential 95% bounds of the median ratio, one per side, valid over every look (optseq.state.runs.sequential);
    None while too few units can decide anything."""
    p_value: float | None
    """One-sided sequential p-value against the threshold, in the direction of the estimate; None without one."""
    higher_is_better: bool
    ratios: tuple[float, ...]
    """Per-pair ratios in the order they came."""
    unit: str = ""
    dropped: int = 0
    """Samples of this metric not counted: halves without a partner, duplicates, replays, bad values."""
    looks: tuple[int, ...] = ()
    """Cumulative units at each look (one per pass that added pairs)."""
    needed: int | None = None
    """Units that must lie on one side of the threshold at this look to decide; None without pairs."""
    budget: int | None = None
    """The unit budget the looks are spent over (the rule's launch budget, or max_repeats for pairs)."""
    above: int | None = None
    below: int | None = None
    """Units above and below the threshold, when one was given."""
    replicate: str = "pair"
    """What the sign test counts: "launch" (a launch of the command, its pairs summarised by their median) or
    "pair" (every arm run its own process, so pairs are independent draws)."""
    units: tuple[float, ...] = ()
    """Per-unit ratios in the order they came: launch medians, or the pairs' own."""
    launches: int = 0
    """Launches that brought counted pairs."""
    mean_ratio: float | None = None
    """Total (mean) time of the baseline over the candidate's, oriented like the ratios: what a tail moves."""
    ordered: int = 0
    baseline_first: int = 0
    """Pairs whose order is known (said by the bench, else taken from the order their samples came in), and in
    how many of them the baseline ran first."""
    baseline: ArmFigures | None = None
    candidate: ArmFigures | None = None
    """Each arm's absolute figures over the counted pairs (median, IQR, extremes, n); None without pairs."""
    baseline_spread: float | None = None
    """The baseline's interquartile range within its launches, over its median (within_launch_spread): the
    noise a pair carries, to set beside the min_speedup − 1 the rule must resolve; None below MIN_PAIRS."""
    noise: str | None = None
    """One line when the figures may be blurred (a busy machine, a baseline wider than the rule resolves);
    the run's end fills it in (state/runs/run_record.py)."""
    noise_said: dict | None = None
    """`noise` as runs/words.py says it, for the export's language; filled in with it."""
    emitted: int = 0
    emitted_baseline_first: int = 0
    """Of the ordered pairs, those whose order was taken from the order their samples came in (the bench gave no
    `first`), and in how many of them the baseline's sample came first."""
    order: str | None = None
    order_said: dict | None = None
    """Where the order came from the samples, one line that says so (run_record.order_said), and its said."""
    stalls: str | None = None
    stalls_said: dict | None = None
    """On an adopt, what its candidate calls could have seen of a stall (run_record.stall_said), and its said."""

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "n": self.n, "estimate": self.estimate, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "p_value": self.p_value, "higher_is_better": self.higher_is_better,
                "ratios": list(self.ratios), "unit": self.unit, "dropped": self.dropped, "looks": list(self.looks),
                "needed": self.needed, "budget": self.budget, "above": self.above, "below": self.below,
                "replicate": self.replicate, "units": list(self.units), "launches": self.launches,
                "mean_ratio": self.mean_ratio, "ordered": self.ordered, "baseline_first": self.baseline_first,
                "emitted": self.emitted, "emitted_baseline_first": self.emitted_baseline_first,
                "method": f"sequential sign test over {UNITS[self.replicate]}",
                "baseline": self.baseline.to_dict() if self.baseline else None,
                "candidate": self.candidate.to_dict() if self.candidate else None,
                "baseline_spread": self.baseline_spread, "noise": self.noise,
                "noise_said": self.noise_said, "order": self.order, "order_said": self.order_said,
                "stalls": self.stalls, "stalls_said": self.stalls_said}


@dataclass(frozen=True)
class ArmFigures:
    """One arm of an A/B run on the rule's metric, over the counted pairs: what hyperfine or pyperf prints.

    The spread is the interquartile range (q1–q3, quartiles of the inclusive method), with min and max beside it.
    """

    n: int
    median: float
    q1: float
    q3: float
    low: float
    high: float
    unit: str = ""

    @classmethod
    def of(cls, values: list[float], unit: str = "") -> "ArmFigures":
        ordered = sorted(values)
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else ordered * 3
        return cls(len(ordered), float(statistics.median(ordered)), float(q1), float(q3), ordered[0], ordered[-1],
                   unit)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "median": self.median, "q1": self.q1, "q3": self.q3, "min": self.low,
                "max": self.high, "unit": self.unit}


def within_launch_spread(pairs) -> float | None:
    """The baseline's relative spread as a pair sees it: each value over its launch's baseline median, and the
    interquartile range of those. Drift between launches cancels in the paired ratios, so it is left out;
    launches of one pair say nothing within, so with none of two or more pairs every value counts as one
    launch. None below MIN_PAIRS values."""
    groups: dict[Any, list[float]] = {}
    for pair in pairs:
        groups.setdefault(pair.run, []).append(pair.baseline)
    if all(len(g) < 2 for g in groups.values()):
        groups = {None: [v for g in groups.values() for v in g]}
    scaled = [v / statistics.median(g) for g in groups.values() if len(g) >= 2 for v in g]
    if len(scaled) < MIN_PAIRS:
        return None
    q1, _, q3 = statistics.quantiles(scaled, n=4, method="inclusive")
    return float(q3 - q1)


def figure(value: float) -> str:
    """A measured value in four significant figures, never in exponent form for a large one: 1234567, 150.3."""
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def arms_text(stats: Mapping[str, Any] | Stats | None, names: bool = False) -> str:
    """`100.2 (99.1–101.3) → 150.3 (148–152) items/s`: each arm's median and (IQR), baseline first; with
    names, `baseline 100.2 (IQR 99.1–101.3) → candidate …`. Empty where the stats carry no per-arm figures.
    A run's Stats, or the export's stats as stored."""
    if isinstance(stats, Stats):
        baseline, candidate, unit = stats.baseline, stats.candidate, stats.unit
    else:
        stats = stats or {}
        baseline, candidate, unit = stats.get(BASELINE), stats.get(CANDIDATE), stats.get("unit")
    if not isinstance(baseline, Mapping) or not isinstance(candidate, Mapping) \
            or not all(isinstance(a.get("median"), (int, float)) for a in (baseline, candidate)):
        return ""
    arms = [baseline, candidate]
    parts = []
    for name, arm in zip((BASELINE, CANDIDATE), arms):
        spread = ""
        if isinstance(arm.get("q1"), (int, float)) and isinstance(arm.get("q3"), (int, float)):
            spread = f" ({'IQR ' if names else ''}{figure(arm['q1'])}–{figure(arm['q3'])})"
        parts.append(f"{name + ' ' if names else ''}{figure(arm['median'])}{spread}")
    unit = arms[1].get("unit") or arms[0].get("unit") or unit or ""
    return " → ".join(parts) + (f" {unit}" if unit else "")


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
              extra: Iterable = (), replicate: str = "pair", higher_is_better: bool | None = None) -> PairedStats:
    """PairedStats of a PairBook; `extra` pairs of a pass under way count as one more look (live display).

    With replicate="launch" the sign test counts launches (passes), each the median of its pairs' ratios,
    and `budget` is the launch budget; with "pair" it counts pairs, `budget` the pair budget.
    `higher_is_better` orients the ratios while the book knows no direction yet (a first pass under way).
    """
    from optseq.state.runs import sequential

    extra = list(extra)
    pairs = [*counted.pairs, *extra]
    ratios = counted.ratios(extra, higher_is_better)
    known = counted.higher_is_better if counted.higher_is_better is not None else higher_is_better
    higher = known is not False
    n = len(ratios)
    if n == 0:
        return PairedStats(counted.metric, 0, None, None, None, None, higher, (), counted.unit, counted.dropped,
                           replicate=replicate)
    groups: dict[Any, list[float]] = {}
    for pair, ratio in zip(pairs, ratios):
        groups.setdefault(pair.run, []).append(ratio)
    if replicate == "launch":
        units = [statistics.median(g) for g in groups.values()]
        looks = tuple(range(1, len(units) + 1))
    else:
        units = ratios
        looks = tuple(counted.looks) + ((n,) if extra else ())
    plan = sequential.design(looks, max(budget or looks[-1], looks[-1]))
    low, high = sequential.bounds(units, plan)
    estimate = float(statistics.median(units))  # numpy's costs more than the whole test on a run's few values
    above = below = p_value = None
    if threshold is not None:
        above = sum(r > threshold for r in units)
        below = sum(r < threshold for r in units)
        p_value = plan.p_value(above if estimate >= threshold else below)
    return PairedStats(counted.metric, n, estimate, low, high, p_value, higher,
                       tuple(float(r) for r in ratios), counted.unit, counted.dropped, looks,
                       plan.needed[-1], plan.budget, above, below, replicate, tuple(float(u) for u in units),
                       len(groups), total_ratio(pairs, higher), sum(p.baseline_first is not None for p in pairs),
                       sum(p.baseline_first is True for p in pairs),
                       ArmFigures.of([p.baseline for p in pairs], counted.unit),
                       ArmFigures.of([p.candidate for p in pairs], counted.unit), within_launch_spread(pairs),
                       emitted=sum(p.emitted for p in pairs),
                       emitted_baseline_first=sum(p.emitted and p.baseline_first is True for p in pairs))


def total_ratio(pairs, higher_is_better: bool) -> float:
    """The baseline's total time over the candidate's, pooled over every pair: a rate's time is its inverse.

    The median ignores a stall that hits one arm now and then (a GC pause, a recompile); the total does not.
    """
    if higher_is_better:
        return sum(1 / p.baseline for p in pairs) / sum(1 / p.candidate for p in pairs)
    return sum(p.baseline for p in pairs) / sum(p.candidate for p in pairs)


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


def sample_field(s: Mapping[str, Any], key: str, i: int, kind: type | tuple[type, ...]) -> Any:
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
