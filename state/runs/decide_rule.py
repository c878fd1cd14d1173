"""The decision rule: statistics and quality guards in, adopt / reject / inconclusive (or a chosen arm) out."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from optseq.state.said import say, text
from optseq.state.plan.model import Rule
from optseq.state.runs.stats import UNITS, PairedStats, StatsError
from optseq.state.runs.words import WORDS
from optseq.state.text import ratio_text

OUTCOMES = ("adopt", "reject", "inconclusive")
MIN_ORDERED = 8
"""Pairs whose order is known before one arm first in every pair is taken for the bench's order (a seeded random
order puts one arm first in all 8 with probability 1 in 128). A pair's order is its bench's `first`, else the
order its two samples came in (state/runs/pairs.py)."""


@dataclass(frozen=True)
class Verdict:
    """What the rule says about one A/B measurement."""

    outcome: str
    """adopt | reject | inconclusive."""
    reason: str
    """One readable line: the figures that decided it."""
    guards: tuple[dict[str, Any], ...] = ()
    """Per guard: name, value (worst seen; None if never reported), limit_max, limit_min, ok (None if unreported)."""
    said: dict | None = field(default=None, compare=False)
    """`reason` as runs/words says it, for the export's language; None where the reason was written otherwise."""

    def to_dict(self) -> dict[str, Any]:
        # a reason the pass loop added to since its said was made keeps its text alone
        said = self.said if self.said is not None and text(self.said, "en", WORDS) == self.reason else None
        return {"outcome": self.outcome, "reason": self.reason, "guards": [dict(g) for g in self.guards],
                "said": said}


def _verdict(outcome: str, said: dict, rows) -> Verdict:
    return Verdict(outcome, text(said, "en", WORDS), rows, said)


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
    count = len(stats.units)
    units = say(UNITS[stats.replicate])  # the plural the counts below say, said in the doc's language
    above = sum(r > rule.min_speedup for r in stats.units)
    below = sum(r < rule.min_speedup for r in stats.units)
    figures = {"speed": speed, "need": need, "count": count, "units": units, "above": above, "below": below,
               "needed": stats.needed}
    if failed:
        first = failed[0]
        others = say("guard_others", names=", ".join(g["name"] for g in failed[1:])) if len(failed) > 1 else ""
        though = say("though", speed=speed) if stats.estimate is not None else ""
        return _verdict("reject", say("guard_failed", name=first["name"], value=_num(first["value"]),
                                      breach=breach_said(first), others=others, though=though), rows)
    first_arm = one_arm_first(stats)
    if first_arm:
        # with no `first` from the bench, the order its samples came in is the order: said so, with the remedy
        key = "one_arm_emitted" if stats.emitted else "one_arm_first"
        return _verdict("inconclusive", say(key, speed=speed, arm=first_arm, ordered=stats.ordered), rows)
    if stats.ci_high is not None and stats.ci_high < rule.min_speedup:
        return _verdict("reject", say("upper_below", **_only(figures, "speed", "need", "below", "count", "units",
                                                             "needed")), rows)
    if missing:
        paren = say("paren", speed=speed) if stats.estimate is not None else ""
        return _verdict("inconclusive", say("guard_missing", names=", ".join(missing), speed=paren), rows)
    if stats.n == 0:
        return _verdict("inconclusive", say("no_pairs", metric=stats.metric, dropped=_dropped(stats)), rows)
    if stats.ci_low is None:
        unit = say(stats.replicate if count == 1 else UNITS[stats.replicate])
        return _verdict("inconclusive", say("cannot_yet", speed=speed, count=count, unit=unit, needed=stats.needed,
                                            need=need), rows)
    if stats.ci_low > rule.min_speedup:
        if stats.mean_ratio is not None and stats.mean_ratio < rule.min_speedup:
            return _verdict("inconclusive", say("mean_below", mean=_x(stats.mean_ratio),
                                                **_only(figures, "speed", "need", "above", "count", "units")), rows)
        return _verdict("adopt", say("lower_clears", guards=say("guards_hold") if rows else "",
                                     **_only(figures, "speed", "need", "above", "count", "units", "needed")), rows)
    return _verdict("inconclusive", say("straddle", **figures), rows)


def _only(fields: dict, *names: str) -> dict:
    return {name: fields[name] for name in names}


def one_arm_first(stats: PairedStats) -> str | None:
    """The arm that ran first in every pair, where at least MIN_ORDERED pairs have an order (the bench's `first`,
    else the order their samples came in); else None."""
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
    if stats.ci_low is not None and stats.ci_high is not None and (stats.ci_low > rule.min_speedup
                                                                   or stats.ci_high < rule.min_speedup):
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


def _is_number(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def breach(row: dict[str, Any]) -> str:
    return text(breach_said(row), "en", WORDS)


def breach_said(row: dict[str, Any]) -> dict:
    if row["limit_max"] is not None and (math.isnan(row["value"]) or row["value"] > row["limit_max"]):
        return say("exceeds_max", limit=_num(row["limit_max"]))
    return say("below_min", limit=_num(row["limit_min"]))


def _speed(stats: PairedStats) -> dict:
    """The figures a verdict names first, as a said of runs/words.py."""
    if stats.estimate is None:
        return say("no_pairs", metric=stats.metric, dropped=_dropped(stats))
    bounds = f" [{_x(stats.ci_low)}, {_x(stats.ci_high)}]" if stats.ci_low is not None and stats.ci_high is not None \
        else ""
    launches = (say("in_launches", count=stats.launches,
                    unit=say("launch" if stats.launches == 1 else UNITS["launch"]))
                if stats.replicate == "launch" else "")
    return say("speed", metric=stats.metric, estimate=_x(stats.estimate), bounds=bounds, n=stats.n,
               launches=launches, p=f" p={stats.p_value:.2g}" if stats.p_value is not None else "",
               dropped=_dropped(stats))


def _dropped(stats: PairedStats) -> dict | str:
    return say("dropped", n=stats.dropped, s="s" * (stats.dropped != 1)) if stats.dropped else ""


def _x(v: float) -> str:
    return f"{ratio_text(v)}×"


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
