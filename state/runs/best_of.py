"""Best of N configs: Hsu's multiple comparisons with the best (MCB) over interleaved blocks, with a margin.

A choice among N configs is not N pairs. The configs run in blocks (every config once per block, in a
random order within it); a block is identified by (`run`, `pair`): the pass and the block's index in it.
For the rule's choose metric each config gets one value per block, and only complete blocks (every
eligible config present) are compared.

The comparison works on the log scale, so differences are ratios and the margin is relative: a config
within `margin` (0.05 = 5%) of the best counts as good as the best. The values must be positive; a value
that is not (or not finite) is dropped, which leaves its block incomplete. The layout is two-way
(configs × blocks): block means are removed, because blocks exist to absorb machine drift, and the
residual variance has (k−1)(b−1) degrees of freedom.

For each config i, θ_i = μ_i − min_{j≠i} μ_j on the log scale, oriented so that "worse" is positive
(a max: rule is negated first). With D_i the same difference of sample means, h = d·s·√(2/b) the
allowance (d the one-sided Dunnett critical value for k−1 comparisons, ρ = ½, ν df, 95%), Hsu's
constrained MCB intervals [min(0, D_i − h), max(0, D_i + h)] hold for every config at once with 95%
confidence. From them, with δ = log(1 + margin):

- best set: the configs with D_i − h ≤ δ. With 95% confidence it holds the true best (for δ = 0 it is
  Hsu's set of configs not shown worse than the best), so a config outside it is, beyond the margin, not
  the best;
- **winner**: a best set of one; P(a wrong single winner) ≤ 5%;
- **best_set**: several configs, every one shown within the margin of the best (upper bound ≤ δ): they
  cannot be told apart and need not be, so the one with the lowest median cost metric is chosen;
- **inconclusive** otherwise, with an estimate of the blocks still needed; under 2 complete blocks
  there is no residual variance and the result is always inconclusive.

Guards are constraints, checked before choosing: a config that fails (or does not report) a quality
guard for its arm, then a config whose median cost exceeds `max_cost_ratio` × the cheapest remaining
config's, is excluded, and the reason names it. P(best) per config, from a seeded bootstrap over
blocks, is shown and never used to decide.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optseq.state.plan.model import Rule
from optseq.state.runs.best_of_result import BestOf, ConfigRow
from optseq.state.said import say, text
from optseq.state.runs.decide_rule import breach_said, guard_rows
from optseq.state.runs.mcb import blocks_needed, bootstrap_p_best, critical_value
from optseq.state.runs.stats import StatsError, sample_field, sample_orientation, sample_value
from optseq.state.runs.words import WORDS
from optseq.state.text import ratio_text

MIN_BLOCKS = 2
"""Complete blocks below which there is no residual variance to compare with."""

Block = tuple[int, int]
"""(pass, block index within the pass)."""


def best_of(samples: Iterable[Mapping[str, Any]], rule: Rule,
            qualities: Iterable[Mapping[str, Any]] = ()) -> BestOf:
    """Compare the configs of a blocked run on the rule's choose metric (see the module docstring).

    `samples`: sample events with `arm` (the config), `metric`, `value`, `higher_is_better`, `unit`, `pair`
    (the block) and, over several passes, `run`. `qualities`: quality events; one with an `arm` applies to
    that config, one without to every config. Raises StatsError (one line) on unusable input.
    """
    direction, metric = _choose(rule)
    margin = _margin(rule)
    data = _collect(samples, metric, rule.cost_metric)
    excluded = _exclusions(data, rule, metric, list(qualities))
    eligible = [a for a in data.order if a not in excluded]
    costs = {a: _median([_median(v) for v in data.costs[a].values()]) for a in data.order if data.costs.get(a)}
    medians = {a: _median(list(data.values[a].values())) for a in data.order if data.values.get(a)}

    def rows(compared: dict[str, dict[str, Any]] | None = None) -> tuple[ConfigRow, ...]:
        return tuple(ConfigRow(a, len(data.values.get(a, {})), medians.get(a), costs.get(a),
                               excluded=_en(excluded[a]) if a in excluded else None, **(compared or {}).get(a, {}))
                     for a in data.order)

    def result(outcome: str, chosen: str | None, said: dict, **fields) -> BestOf:
        return BestOf(outcome, chosen, _en(said), said=said, **fields)

    common = {"metric": metric, "margin": margin, "unit": data.unit, "warnings": tuple(data.warnings)}
    notes = _excluded_note(excluded)
    if not eligible:
        return result("inconclusive", None, say("bo_none", metric=metric, notes=notes), blocks=0,
                      blocks_needed=None, rows=rows(), **common)
    seen = sorted({b for a in eligible for b in data.values[a]})
    complete = [b for b in seen if all(b in data.values[a] for a in eligible)]
    n, k = len(complete), len(eligible)
    incomplete = len(seen) - n
    common["incomplete"] = incomplete
    lost = _lost(incomplete, data.dropped)
    if n < MIN_BLOCKS:
        return result("inconclusive", None, say("bo_few", metric=metric, need=MIN_BLOCKS, n=n, lost=lost,
                                                notes=notes), blocks=n, blocks_needed=MIN_BLOCKS - n, rows=rows(),
                      **common)
    if k == 1:
        only = eligible[0]
        said = say("bo_only", only=only, metric=metric, median=f"{_num(medians[only])}{_unit(data.unit)}", n=n,
                   lost=lost, notes=notes)
        return result("winner", only, said, blocks=n, blocks_needed=None,
                      rows=rows({only: {"in_best_set": True, "p_best": 1.0}}), **common)

    import numpy as np

    y = np.log(np.array([[data.values[a][b] for b in complete] for a in eligible], dtype=float))
    if direction == "max":
        y = -y  # lower is better from here on
    means = y.mean(axis=1)
    resid = y - means[:, None] - y.mean(axis=0)[None, :] + y.mean()
    df = (k - 1) * (n - 1)
    sd = float(math.sqrt(float((resid ** 2).sum()) / df))
    d = critical_value(k - 1, df)
    h = d * sd * math.sqrt(2.0 / n)
    delta = math.log1p(margin)
    gaps = {a: float(means[i] - np.min(np.delete(means, i))) for i, a in enumerate(eligible)}
    in_set = {a: gaps[a] - h <= delta for a in eligible}
    within = {a: gaps[a] + h <= delta for a in eligible}
    p_best = bootstrap_p_best(y)
    compared = {a: {"ratio": math.exp(gaps[a]), "low": math.exp(min(0.0, gaps[a] - h)),
                    "high": math.exp(max(0.0, gaps[a] + h)), "in_best_set": in_set[a], "p_best": p_best[i]}
                for i, a in enumerate(eligible)}
    common.update(critical_value=d, df=df, sd=sd, allowance=h, blocks=n, rows=rows(compared))
    best = min(eligible, key=lambda a: gaps[a])  # stable: ties keep the order configs appeared in
    members = [a for a in eligible if in_set[a]]
    others = [a for a in eligible if a != best]
    mcb = say("bo_mcb", h=_pct(math.expm1(h)), n=n, margin=_pct(margin))
    if members == [best]:
        trail = [math.exp(gaps[a]) for a in others]
        why = say("bo_winner", best=best, metric=metric, median=f"{_num(medians[best])}{_unit(data.unit)}", k=k,
                  low=_x(min(trail)), high=_x(max(trail)), mcb=mcb, lost=lost, notes=notes)
        return result("winner", best, why, blocks_needed=None, **common)
    if all(within[a] for a in members):
        pick, how = _cheapest(members, best, costs, rule.cost_metric)
        highs = [say("bo_high", arm=a, high=_x(compared[a]["high"])) for a in members]
        why = say("bo_set", pick=pick, members=_and(members), margin=_pct(margin), metric=metric, highs=highs,
                  mcb=mcb, how=how, lost=lost, notes=notes)
        return result("best_set", pick, why, blocks_needed=None, **common)
    unresolved = [a for a in others if abs(gaps[a] - delta) <= h] or others
    needed = blocks_needed(k, n, sd, min(abs(gaps[a] - delta) for a in unresolved))
    figures = _and([say("bo_figure", arm=a, ratio=_x(math.exp(gaps[a])), high=_x(compared[a]["high"]))
                    for a in unresolved])
    why = say("bo_leads", metric=metric, best=best, figures=figures, mcb=mcb, needed=needed, s="s" * (needed != 1),
              lost=lost, notes=notes)
    return result("inconclusive", None, why, blocks_needed=needed, **common)


def more_blocks(result: BestOf, rule: Rule, so_far: int) -> int:
    """Blocks to ask for next while undecided: double the blocks run so far, up to `max_repeats`.

    0 once decided, once the budget is spent, or when more blocks cannot help (no config qualifies).
    Mirrors decide_rule.more_pairs.
    """
    if result.outcome != "inconclusive" or result.blocks_needed is None or so_far >= rule.max_repeats:
        return 0
    target = min(rule.max_repeats, max(2 * so_far, rule.repeats, MIN_BLOCKS))
    return max(target - so_far, 0)


@dataclass
class _Data:
    order: list[str]
    values: dict[str, dict[Block, float]]
    """Choose metric: config -> block -> its (first) value."""
    costs: dict[str, dict[Block, list[float]]]
    """Cost metric: config -> block -> every value (e.g. one per iteration)."""
    unit: str
    dropped: int
    warnings: list[str]


def _collect(samples: Iterable[Mapping[str, Any]], metric: str, cost_metric: str | None) -> _Data:
    data = _Data([], {}, {}, "", 0, [])
    orient: tuple[bool | None, str] = (None, "")
    duplicates: dict[str, int] = {}
    for i, s in enumerate(samples):
        name = sample_field(s, "metric", i, str)
        if name != metric and name != cost_metric:
            continue
        arm = sample_field(s, "arm", i, str)
        value = sample_value(s, i)
        block = (_run(s, i), sample_field(s, "pair", i, int))
        if arm not in data.order:
            data.order.append(arm)
        if name == metric:
            orient = sample_orientation(s, i, metric, *orient)
            if not (math.isfinite(value) and value > 0):
                data.dropped += 1  # the log scale needs a positive value; its block is incomplete without it
                continue
            slot = data.values.setdefault(arm, {})
            if block in slot:
                duplicates[arm] = duplicates.get(arm, 0) + 1
                continue
            slot[block] = value
        elif math.isfinite(value):
            data.costs.setdefault(arm, {}).setdefault(block, []).append(value)
    if orient[0] is None:
        raise StatsError(f"no samples of {metric!r}, the metric the rule chooses on")
    data.unit = orient[1]
    data.warnings += [f"{arm}: {count} more {metric} value{'s' * (count != 1)} in a block already measured; "
                      "kept the first" for arm, count in duplicates.items()]
    return data


def _exclusions(data: _Data, rule: Rule, metric: str, qualities: list[Mapping[str, Any]]) -> dict[str, dict]:
    """Config -> why it cannot be chosen (a said): no usable value, a guard, then its cost against the cheapest
    left."""
    out: dict[str, dict] = {}
    for i, q in enumerate(qualities):
        arm = q.get("arm") if isinstance(q, Mapping) else None
        if arm is not None and not isinstance(arm, str):
            raise StatsError(f"quality #{i}: 'arm' should be a string, got {arm!r}")
        if arm is not None and arm not in data.order:
            data.warnings.append(f"quality #{i} is for {arm!r}, which reported no {metric}")
    for arm in data.order:
        if not data.values.get(arm):
            out[arm] = say("bo_no_usable", metric=metric)
            continue
        mine = [q for q in qualities if q.get("arm") in (None, arm)]
        rows = guard_rows(rule, mine)
        failed = [g for g in rows if g["ok"] is False]
        missing = [g["name"] for g in rows if g["ok"] is None]
        if failed:
            out[arm] = say("bo_guards", guards=[say("bo_guard", name=g["name"], value=_num(g["value"]),
                                                    breach=breach_said(g)) for g in failed])
        elif missing:
            out[arm] = say("bo_guard_missing", names=", ".join(missing))
    if rule.cost_metric and rule.max_cost_ratio:
        priced = {}
        for arm in data.order:
            if arm in out:
                continue
            if not data.costs.get(arm):
                out[arm] = say("bo_no_cost_value", cost_metric=rule.cost_metric)
                continue
            priced[arm] = _median([_median(v) for v in data.costs[arm].values()])
        if priced:
            cheapest = min(priced, key=lambda arm: priced[arm])
            floor = priced[cheapest]
            for arm, cost in priced.items():
                ratio = cost / floor if floor > 0 else (1.0 if cost <= floor else math.inf)
                if ratio > rule.max_cost_ratio:
                    out[arm] = say("bo_over_cost", ratio=_num(float(ratio)), cheapest=cheapest,
                                   cost_metric=rule.cost_metric, limit=_num(float(rule.max_cost_ratio)))
    return out


def _cheapest(members: list[str], best: str, costs: dict[str, float], cost_metric: str | None) -> tuple[str, dict]:
    if not cost_metric:
        return best, say("bo_no_cost_metric")
    priced = [a for a in members if a in costs]
    if not priced:
        return best, say("bo_no_cost", cost_metric=cost_metric)
    pick = min(priced, key=lambda a: costs[a])  # stable: ties keep the order configs appeared in
    rest = [say("bo_cost", arm=a, cost=_num(costs[a])) for a in members if a != pick and a in costs]
    return pick, say("bo_cheapest", cost_metric=cost_metric, cost=_num(costs[pick]),
                     rest=say("bo_rest", costs=rest) if rest else "")


def _choose(rule: Rule) -> tuple[str, str]:
    if not rule.choose:
        raise StatsError(f"the rule on {rule.metric!r} has no 'choose' (min:METRIC or max:METRIC)")
    direction, _, metric = rule.choose.partition(":")
    if direction not in ("min", "max") or not metric:
        raise StatsError(f"choose: expected 'min:METRIC' or 'max:METRIC', got {rule.choose!r}")
    return direction, metric


def _margin(rule: Rule) -> float:
    margin = 0.0 if rule.margin is None else rule.margin
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not (0 <= margin < math.inf):
        raise StatsError(f"margin: expected a relative margin ≥ 0 (0.05 = 5%), got {rule.margin!r}")
    return float(margin)


def _run(s: Mapping[str, Any], i: int) -> int:
    """The pass a sample came from; a single pass's samples may carry none."""
    run = s.get("run", 0)
    if run is None:
        return 0
    if not isinstance(run, int) or isinstance(run, bool):
        raise StatsError(f"sample #{i}: 'run' should be an integer, got {run!r}")
    return run


def _median(values) -> float:
    import statistics

    return float(statistics.median(values))


def _excluded_note(excluded: dict[str, dict]) -> dict | str:
    if not excluded:
        return ""
    return say("bo_excluded", reasons=[say("bo_excluded_one", arm=a, why=why) for a, why in excluded.items()])


def _lost(incomplete: int, dropped: int) -> dict | str:
    parts = []
    if incomplete:
        parts.append(say("bo_incomplete", n=incomplete, s="s" * (incomplete != 1)))
    if dropped:
        parts.append(say("bo_dropped", n=dropped, s="s" * (dropped != 1)))
    return say("bo_lost", parts=parts) if parts else ""


def _pct(v: float) -> str:
    return f"{100 * v:.3g}%"


def _x(v: float) -> str:
    return f"{ratio_text(v, 3)}×"


def _and(items: list) -> Any:
    """`a, b and c`: the items (strings or saids) as one field."""
    return items[0] if len(items) == 1 else say("bo_last_and", items=items[:-1], last=items[-1])


def _en(said: dict) -> str:
    return text(said, "en", WORDS)


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""
