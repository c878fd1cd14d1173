"""The launch as the unit of an A/B run: how many launches, how many pairs in each, and what would settle a run.

A process's memory layout, link order, autotuning choices and the clock it lands on give each launch of a
bench its own speed, shared by every pair measured inside it (pyperf, Stabilizer, Kalibera & Jones). So
pairs inside one launch are not independent draws: the test counts launches, each summarised by the median
of its pairs' ratios, and pairs inside a launch buy precision within it, not independence.

How many pairs a launch measures is chosen from the run itself (Kalibera & Jones, "Rigorous benchmarking in
reasonable time", 2013): with the variance of the log ratio split into a part between launches (sb²) and one
within them (sw²), a launch costing c_L seconds to start and warm up and c_p seconds a pair, the precision a
second buys is greatest at m* = sqrt((c_L / c_p) · (sw² / sb²)) pairs a launch.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from optseq.state.runs import sequential

BUDGET_FACTOR = 3
"""A rule without max_launches may extend to this many times the launches its first look needs."""
PILOT_LAUNCHES = 2
"""Launches measured at the rule's `repeats` pairs before the variance split is estimated."""


@dataclass(frozen=True)
class LaunchPlan:
    """The launches an A/B rule asks for."""

    first: int
    """Launches before the first look that can decide."""
    budget: int
    """The launch budget the error is spent over (the spending function's 100%)."""
    decidable: bool
    """Whether any look within the budget can decide at all."""


def launch_plan(rule) -> LaunchPlan:
    """The rule's launches: `launches` and `max_launches` where it sets them, else the fewest that decide at a
    first look and BUDGET_FACTOR times that, never more launches than the pair budget has pairs."""
    budget = rule.max_launches
    if budget is None:
        first = rule.launches or sequential.first_decidable(BUDGET_FACTOR * 6)
        budget = BUDGET_FACTOR * first
    budget = max(1, min(budget, rule.max_repeats))
    fewest = sequential.first_decidable(budget)
    first = max(rule.launches or fewest, fewest)
    return LaunchPlan(first=min(first, budget), budget=budget, decidable=fewest <= budget)


@dataclass(frozen=True)
class Split:
    """How the variance of the per-pair log ratio divides between launches and within them, and what each costs."""

    between: float
    """sb²: the variance of a launch's true ratio (log scale) around the lever's."""
    within: float
    """sw²: the variance of one pair's log ratio inside a launch."""
    launches: int
    launch_s: float | None = None
    """Seconds a launch costs before and after its pairs (start-up, imports, warm-ups, exit)."""
    pair_s: float | None = None
    """Seconds one pair costs."""

    @property
    def share_between(self) -> float:
        total = self.between + self.within
        return self.between / total if total > 0 else 0.0

    def optimum(self) -> float | None:
        """Kalibera & Jones's pairs a launch; None when the costs are unknown; inf when launches do not vary."""
        if not self.launch_s or not self.pair_s or self.pair_s <= 0:
            return None
        if self.between <= 0:
            return math.inf
        return math.sqrt(max(self.launch_s, 0.0) / self.pair_s * self.within / self.between)

    def text(self, chosen: int) -> str:
        costs = (f"; a launch costs {self.launch_s:.2g} s and a pair {self.pair_s:.2g} s"
                 if self.launch_s is not None and self.pair_s else "")
        return (f"variance {100 * self.share_between:.0f}% between launches, "
                f"{100 * (1 - self.share_between):.0f}% within{costs} → {chosen} pair{'s' * (chosen != 1)} a launch")

    def to_dict(self) -> dict:
        return {"between": self.between, "within": self.within, "launches": self.launches,
                "share_between": self.share_between, "launch_s": self.launch_s, "pair_s": self.pair_s}


def split(groups: list[list[float]],
          timings: Sequence[tuple[int, float | None, float | None]] = ()) -> Split | None:
    """The variance split of per-launch groups of log ratios (one-way random effects, method of moments), and
    the costs from each launch's (pairs, seconds in all, seconds a pair); None below two launches with pairs
    or without one launch of two pairs (nothing says how a launch varies inside)."""
    groups = [g for g in groups if g]
    inside = [g for g in groups if len(g) >= 2]
    if len(groups) < 2 or not inside:
        return None
    within = sum(sum((x - statistics.fmean(g)) ** 2 for x in g) for g in inside) / sum(len(g) - 1 for g in inside)
    means = [statistics.fmean(g) for g in groups]
    between = statistics.variance(means) - within * statistics.fmean(1 / len(g) for g in groups)
    pair_s = [p for _, _, p in timings if p is not None and p > 0]
    launch_s = [total - n * statistics.median(pair_s) for n, total, _ in timings if total is not None] if pair_s else []
    return Split(max(between, 0.0), within, len(groups),
                 max(statistics.median(launch_s), 0.0) if launch_s else None,
                 statistics.median(pair_s) if pair_s else None)


def pairs_per_launch(found: Split | None, cap: int) -> int:
    """Pairs the next launch asks for: Kalibera & Jones's optimum, within [1, cap]; the cap while unknown."""
    best = found.optimum() if found is not None else None
    if best is None or math.isinf(best):
        return max(cap, 1)
    return max(1, min(cap, round(best)))


SETTLE_POWER = 0.8
"""`settle` names the launches that decide with this probability at the effect measured so far."""
MAX_SETTLE = 1000


def settle(above: int, below: int, alpha: float = sequential.ALPHA, share: float | None = None) -> int | None:
    """About how many more launches would settle an undecided run, at the share of launches above the
    threshold (`share`, from the effect measured so far: share_above; else the counts' own); None when that share
    is too close to even for any number to do it likely.

    One more fixed look at n launches decides when at least c(n) lie on one side (the sign test at the
    error left); the answer is the smallest added count whose chance of that reaches SETTLE_POWER: given `share`,
    with the launches so far where they lie and each added one on the estimate's side as often as `share` says;
    else with every launch above the threshold as often as so far (a half added to each side).
    """
    import numpy as np
    from scipy import stats

    n0 = above + below
    p = (above + 0.5) / (n0 + 1)
    n = np.arange(n0 + 1, n0 + MAX_SETTLE + 1)
    needed = stats.binom.isf(alpha, n, 0.5) + 1  # the fewest on one side whose tail is within alpha
    if share is None:
        power = stats.binom.sf(needed - 1, n, max(p, 1 - p))
    else:  # the launches so far stay where they lie; each added one falls on the estimate's side as `share` says
        have = above if share >= 0.5 else below
        power = stats.binom.sf(needed - have - 1, n - n0, max(share, 1 - share))
    hits = np.flatnonzero(power >= SETTLE_POWER)
    return int(n[hits[0]] - n0) if hits.size else None


def share_above(units, threshold: float) -> float | None:
    """How often a unit lies above the threshold at the effect measured so far: the median ratio's distance from
    the threshold over the units' spread (log scale, normal about the median with their SD). Two runs
    with as many units on either side follow their estimates: 1.07× settles sooner than 0.97× against 0.95×.
    None without two positive units."""
    from statistics import NormalDist

    logs = [math.log(u) for u in units if u > 0]
    if len(logs) < 2 or threshold <= 0:
        return None
    centre = statistics.median(logs)
    spread = statistics.stdev(logs)  # not the MAD: units in clusters (a bimodal bench) make it near 0
    distance = centre - math.log(threshold)
    if spread <= 0:
        return 0.5 if distance == 0 else float(distance > 0)
    return NormalDist().cdf(distance / spread)
