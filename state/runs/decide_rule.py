"""The decision rule: statistics and quality guards in, adopt / reject / inconclusive (or a chosen arm) out."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optseq.state.plan.model import Rule
from optseq.state.runs.stats import UNITS, PairedStats, StatsError, count_text

OUTCOMES = ("adopt", "reject", "inconclusive")
MIN_ORDERED = 8
"""Pairs that must say which arm ran first before one arm first in every pair is taken for the bench's order
(a seeded random order puts one arm first in all 8 with probability 1 in 128)."""


@dataclass(frozen=True)
class Verdict:
    """What the rule says about one A/B measurement."""

    outcome: str
    """adopt | reject | inconclusive."""
    reason: str
    """One readable line: the figures that decided it."""
    guards: tuple[dict[str, Any], ...] = ()
    """Per guard: name, value (worst seen; None if never reported), limit_max, limit_min, ok (None if unreported)."""

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reason": self.reason, "guards": [dict(g) for g in self.guards]}


def decide(stats: PairedStats, rule: Rule, qualities: Iterable[Mapping[str, Any]] = ()) -> Verdict:
    """Adopt when the sequential lower bound clears `min_speedup`, the total-time ratio agrees and every guard
    holds; reject when the upper bound lies below it or any guard fails, however fast; otherwise inconclusive —
    never a coin flip.

    The bounds come from the group-sequential sign test over the run's units (launches, or pairs where every arm
    run is its own process; optseq.state.runs.sequential), so the chance of adopting a lever whose true median
    ratio is exactly `min_speedup` stays within 5% over all the run's looks. The median is blind to a stall that
    hits one arm now and then; the ratio of total time is not, and a candidate it puts below the threshold is not
    adopted, however its median looks.
    """
    if stats.metric != rule.metric:
        raise StatsError(f"statistics are for {stats.metric!r} but the rule decides on {rule.metric!r}")
    rows = guard_rows(rule, qualities)
    failed = [g for g in rows if g["ok"] is False]
    missing = [g["name"] for g in rows if g["ok"] is None]
    speed = _speed(stats)
    need = _x(rule.min_speedup)
    units, count = UNITS[stats.replicate], len(stats.units)
    above = sum(r > rule.min_speedup for r in stats.units)
    below = sum(r < rule.min_speedup for r in stats.units)
    if failed:
        first = failed[0]
        why = f"guard {first['name']} = {_num(first['value'])} {breach(first)}"
        if len(failed) > 1:
            why += f" (and {', '.join(g['name'] for g in failed[1:])})"
        if stats.estimate is not None:
            why += f", though {speed}"
        return Verdict("reject", why, rows)
    first = one_arm_first(stats)
    if first:
        return Verdict("inconclusive", f"{speed}: the {first} ran first in all {stats.ordered} pairs, so a warm-up "
                                       f"or a drift counts for one arm: not decided (counterbalance the arms, as "
                                       f"kit.pairs does)", rows)
    if stats.ci_high is not None and stats.ci_high < rule.min_speedup:
        return Verdict("reject", f"{speed}: 95% upper bound below {need} ({below} of {count} {units} below, "
                                 f"{stats.needed} needed)", rows)
    if missing:
        return Verdict("inconclusive", f"guard {', '.join(missing)} not reported" + (
            f" ({speed})" if stats.estimate is not None else ""), rows)
    if stats.n == 0:
        return Verdict("inconclusive", f"no complete pairs of {stats.metric}{_dropped(stats)}", rows)
    if stats.ci_low is None:
        return Verdict("inconclusive", f"{speed}: {count_text(count, stats.replicate)} cannot decide yet "
                                       f"({stats.needed} on one side of {need} needed)", rows)
    if stats.ci_low > rule.min_speedup:
        if stats.mean_ratio is not None and stats.mean_ratio < rule.min_speedup:
            return Verdict("inconclusive", f"{speed}: not adopted: the median clears {need} ({above} of {count} "
                                           f"{units} above) but total time does not ({_x(stats.mean_ratio)}): "
                                           f"slow outliers, a stall or a tail", rows)
        return Verdict("adopt", f"{speed}: 95% lower bound clears {need} ({above} of {count} {units} above, "
                                f"{stats.needed} needed)" + ("; guards hold" if rows else ""), rows)
    return Verdict("inconclusive", f"{speed}: 95% bounds straddle {need} ({above} above, {below} below of {count} "
                                   f"{units}; {stats.needed} on one side needed)", rows)


def one_arm_first(stats: PairedStats) -> str | None:
    """The arm that ran first in every pair, where the bench said so in at least MIN_ORDERED pairs; else None."""
    if stats.ordered >= MIN_ORDERED and stats.baseline_first in (0, stats.ordered):
        return "baseline" if stats.baseline_first else "candidate"
    return None


def more_pairs(stats: PairedStats, rule: Rule, so_far: int) -> int:
    """Pairs to add while the bounds straddle the threshold: double the pairs run so far, up to `max_repeats`.

    0 once the statistics decide either way, or the budget is spent. Guards are not its business: a
    missing or failed guard is not cured by more pairs.
    """
    if so_far >= rule.max_repeats:
        return 0
    if stats.ci_low is not None and (stats.ci_low > rule.min_speedup or stats.ci_high < rule.min_speedup):
        return 0
    target = min(rule.max_repeats, max(2 * so_far, rule.repeats))
    return max(target - so_far, 0)


def guard_rows(rule: Rule, qualities: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Check the rule's guards, and every limit a run reported with its own `quality` events, on the worst value."""
    seen: dict[str, list[tuple[float, float | None]]] = {}
    for i, q in enumerate(qualities):
        name, value, limit = _quality(q, i)
        seen.setdefault(name, []).append((value, limit))
    rows = []
    for guard in rule.guards:
        events = seen.get(guard.name, [])
        if not events:
            rows.append({"name": guard.name, "value": None, "limit_max": _float(guard.max),
                         "limit_min": _float(guard.min), "ok": None})
            continue
        rows.append(_check(guard.name, events, _float(guard.max), _float(guard.min)))
    ruled = {g.name for g in rule.guards}
    for name, events in seen.items():
        if name not in ruled and any(limit is not None for _, limit in events):
            rows.append(_check(name, events, None, None))
    return tuple(rows)


def _check(name: str, events: list[tuple[float, float | None]], rule_max, rule_min) -> dict[str, Any]:
    """One guard row; the strictest limit (the rule's or a run's own) applies to the worst value."""
    values = [v for v, _ in events]
    limits = [lim for _, lim in events if lim is not None] + ([rule_max] if rule_max is not None else [])
    limit_max = min(limits) if limits else None
    hi = max(values, key=lambda v: math.inf if math.isnan(v) else v)
    lo = min(values, key=lambda v: -math.inf if math.isnan(v) else v)
    # A NaN quality (a diverged loss) fails every limit rather than slipping past the comparisons.
    fail_max = limit_max is not None and (math.isnan(hi) or hi > limit_max)
    fail_min = rule_min is not None and (math.isnan(lo) or lo < rule_min)
    value = lo if fail_min and not fail_max or limit_max is None else hi
    return {"name": name, "value": value, "limit_max": limit_max, "limit_min": rule_min,
            "ok": not (fail_max or fail_min)}


def _quality(q: Mapping[str, Any], i: int) -> tuple[str, float, float | None]:
    if not isinstance(q, Mapping):
        raise StatsError(f"quality #{i}: expected an object, got {type(q).__name__}")
    name, value, limit = q.get("name"), q.get("value"), q.get("limit")
    if not isinstance(name, str) or not name:
        raise StatsError(f"quality #{i}: 'name' should be a non-empty string, got {name!r}")
    if not _is_number(value):
        raise StatsError(f"quality #{i} ({name}): 'value' should be a number, got {value!r}")
    if limit is not None and not _is_number(limit):
        raise StatsError(f"quality #{i} ({name}): 'limit' should be a number, got {limit!r}")
    return name, float(value), None if limit is None else float(limit)


def _float(v) -> float | None:
    return None if v is None else float(v)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def breach(row: dict[str, Any]) -> str:
    if row["limit_max"] is not None and (math.isnan(row["value"]) or row["value"] > row["limit_max"]):
        return f"exceeds max {_num(row['limit_max'])}"
    return f"is below min {_num(row['limit_min'])}"


def _speed(stats: PairedStats) -> str:
    if stats.estimate is None:
        return f"no complete pairs of {stats.metric}{_dropped(stats)}"
    text = f"{stats.metric} {_x(stats.estimate)}"
    if stats.ci_low is not None:
        text += f" [{_x(stats.ci_low)}, {_x(stats.ci_high)}]"
    text += f" n={stats.n}" + (f" in {count_text(stats.launches, 'launch')}" if stats.replicate == "launch" else "")
    if stats.p_value is not None:
        text += f" p={stats.p_value:.2g}"
    return text + _dropped(stats)


def _dropped(stats: PairedStats) -> str:
    return f", {stats.dropped} sample{'s' * (stats.dropped != 1)} not counted" if stats.dropped else ""


def _x(v: float) -> str:
    return f"{v:.2f}×"


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
