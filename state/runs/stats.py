"""Statistics over a run's raw `sample` events: paired A/B ratios and per-arm medians, with bootstrap CIs."""
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
    """Complete pairs used."""
    estimate: float | None
    """Median of the per-pair ratios; None without pairs."""
    ci_low: float | None
    ci_high: float | None
    """95% bootstrap CI of the median ratio; None below MIN_PAIRS pairs."""
    p_value: float | None
    """Two-sided Wilcoxon signed-rank on the log ratios (H0: no difference); None below MIN_PAIRS."""
    higher_is_better: bool
    ratios: tuple[float, ...]
    """Per-pair ratios in pair order."""
    unit: str = ""
    dropped: int = 0
    """Samples of this metric left out: halves without a partner, or a pair with a non-positive value."""

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "n": self.n, "estimate": self.estimate, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "p_value": self.p_value, "higher_is_better": self.higher_is_better,
                "ratios": list(self.ratios), "unit": self.unit, "dropped": self.dropped}


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


def paired(samples: Iterable[Mapping[str, Any]], metric: str) -> PairedStats:
    """Pair baseline and candidate samples of `metric` by (`run`, `pair`) and summarise the ratios.

    Samples gathered over several runs (an extended A/B) must carry a `run` key, because each run
    numbers its pairs from zero; two samples of one arm under one key are refused.
    """
    halves: dict[tuple, dict[str, float]] = {}
    orient: bool | None = None
    unit = ""
    for i, s in enumerate(samples):
        if _field(s, "metric", i, str) != metric:
            continue
        arm = _field(s, "arm", i, str)
        if arm not in (BASELINE, CANDIDATE):
            continue
        value = _value(s, i)
        orient, unit = _orientation(s, i, metric, orient, unit)
        pair = _field(s, "pair", i, int)
        key = (s.get("run"), pair)
        slot = halves.setdefault(key, {})
        if arm in slot:
            where = f"pair {pair}" + (f" of run {key[0]}" if key[0] is not None else "")
            raise StatsError(f"sample #{i}: a second {arm} sample of {metric} for {where}")
        slot[arm] = value
    higher = True if orient is None else orient
    ratios, dropped = [], 0
    for slot in halves.values():
        if len(slot) < 2:
            dropped += 1
            continue
        base, cand = slot[BASELINE], slot[CANDIDATE]
        if not (base > 0 and cand > 0 and math.isfinite(base) and math.isfinite(cand)):
            dropped += 2
            continue
        ratios.append(cand / base if higher else base / cand)
    n = len(ratios)
    if n == 0:
        return PairedStats(metric, 0, None, None, None, None, higher, (), unit, dropped)
    import numpy as np

    estimate = float(np.median(ratios))
    ci_low = ci_high = p_value = None
    if n >= MIN_PAIRS:
        logs = np.log(np.asarray(ratios, dtype=float))
        lo, hi = median_ci(logs)
        ci_low, ci_high = math.exp(lo), math.exp(hi)
        p_value = _wilcoxon(logs)
    return PairedStats(metric, n, estimate, ci_low, ci_high, p_value, higher, tuple(float(r) for r in ratios),
                       unit, dropped)


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
        metric = _field(s, "metric", i, str)
        if wanted is not None and metric not in wanted:
            continue
        arm = _field(s, "arm", i, str)
        value = _value(s, i)
        orient[metric] = _orientation(s, i, metric, *orient.get(metric, (None, "")))
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


def _wilcoxon(logs) -> float:
    from scipy import stats

    with warnings.catch_warnings():
        # All-zero differences (identical arms) warn and give p = 1, which is the right answer.
        warnings.simplefilter("ignore")
        p = float(stats.wilcoxon(logs).pvalue)
    return p if math.isfinite(p) else 1.0


def _field(s: Mapping[str, Any], key: str, i: int, kind: type):
    if not isinstance(s, Mapping):
        raise StatsError(f"sample #{i}: expected an object, got {type(s).__name__}")
    if key not in s:
        raise StatsError(f"sample #{i}: missing {key!r}")
    value = s[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        name = "a number" if isinstance(kind, tuple) else {str: "a string", int: "an integer", bool: "true or false"}[kind]
        raise StatsError(f"sample #{i}: {key!r} should be {name}, got {value!r}")
    return value


def _value(s: Mapping[str, Any], i: int) -> float:
    value = _field(s, "value", i, (int, float))
    return float(value)


def _orientation(s: Mapping[str, Any], i: int, metric: str, seen: bool | None, unit: str) -> tuple[bool, str]:
    """The metric's direction and unit; every sample of one metric must agree on the direction."""
    higher = _field(s, "higher_is_better", i, bool)
    if seen is not None and higher != seen:
        raise StatsError(f"sample #{i}: {metric} has higher_is_better={higher}, earlier samples say {seen}")
    return higher, unit or str(s.get("unit") or "")
