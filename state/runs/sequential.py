"""The group-sequential sign test behind every A/B decision: how many pairs must beat the threshold at each look.

A run is looked at after every pass, and an undecided run asks for more pairs: each look is another
chance to adopt by luck. The bound here covers all looks together. Under the boundary null (the true
median ratio equals the threshold) each pair lands above the threshold with probability exactly 1/2,
whatever the noise, so the count of pairs above it is a fair binomial walk. Its exact law over the
looks is computed by dynamic programming, and the adopt boundary at each look is the smallest count
whose first-crossing probability fits the alpha spent so far (Lan-DeMets, Pocock-type spending over
the pair budget). The reject boundary is the mirror image. No normality, no symmetry, no simulation:
the guarantee P(adopt | median ratio = threshold) <= ALPHA holds for any continuous noise and any
number of passes, and the bounds are order statistics of the very ratios whose median is shown.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

BOUND = 0.05
"""The guarantee per side over all looks: P(adopt) at a true ratio equal to the threshold, and P(reject) there."""
ALPHA = 0.04
"""What the looks spend, per side. The sign test is exact when every unit lands above the threshold with
probability 1/2 at the boundary; a real bench leaves a little asymmetry no counterbalancing removes exactly (a
warm-up that fades unevenly over a pair, a drift that is not linear), and the simulation that checks the bound
has its own sampling error: the 1% between ALPHA and BOUND is the room for both."""


def spent(fraction: float, alpha: float = ALPHA) -> float:
    """Alpha spent by the time `fraction` of the pair budget is used: Pocock-type, front-loaded enough that
    a clear effect can be adopted at the first look (Lan & DeMets 1983)."""
    t = min(max(fraction, 0.0), 1.0)
    return alpha * math.log1p((math.e - 1.0) * t)


@dataclass(frozen=True)
class Design:
    """The boundaries of one run's looks, and the null law of the count at each look."""

    looks: tuple[int, ...]
    """Cumulative pairs at each look."""
    budget: int
    """The rule's pair budget (max_repeats): the spending function's 100%."""
    needed: tuple[int, ...]
    """Per look: pairs on one side of the threshold needed to decide; looks[k] + 1 means none can decide."""
    crossed: tuple[float, ...]
    """Per look: null probability of first crossing the adopt boundary there."""
    survivors: tuple[tuple[float, ...], ...]
    """Per look: null law of the count above the threshold over the walks not yet crossed, before deciding."""

    def p_value(self, above: int) -> float:
        """One-sided p-value in the stage-wise order (earlier crossings are more extreme) for `above`
        pairs beyond the threshold at the last look: exact under the boundary null."""
        earlier = sum(self.crossed[:-1])
        law = self.survivors[-1]
        return min(1.0, earlier + sum(law[above:]))


def design(looks: tuple[int, ...], budget: int, alpha: float = ALPHA) -> Design:
    """Boundaries for looks at these cumulative pair counts under a budget of `budget` pairs."""
    looks = tuple(int(n) for n in looks)
    if any(b <= a for a, b in zip(looks, looks[1:])) or (looks and looks[0] < 1):
        raise ValueError(f"looks must be increasing positive pair counts, got {looks}")
    return _design(looks, max(int(budget), 1), float(alpha))


@lru_cache(maxsize=512)
def _design(looks: tuple[int, ...], budget: int, alpha: float) -> Design:
    import numpy as np
    from scipy import stats

    law = np.ones(1)  # the count above the threshold among walks that have not crossed yet
    previous, used = 0, 0.0
    needed, crossed, survivors = [], [], []
    for n in looks:
        law = np.convolve(law, stats.binom.pmf(np.arange(n - previous + 1), n - previous, 0.5))
        survivors.append(tuple(float(p) for p in law))
        allowed = spent(n / budget, alpha) - used
        tails = np.cumsum(law[::-1])[::-1]  # tails[s] = P(count >= s, not crossed before)
        # the relative slack keeps a tail that equals the allowance (in exact arithmetic) inside it
        fits = [s for s in range(n + 1) if tails[s] <= allowed * (1 + 1e-9)]
        c = fits[0] if fits else n + 1
        tail = float(tails[c]) if c <= n else 0.0
        used += tail
        needed.append(c)
        crossed.append(tail)
        law = law.copy()
        law[c:] = 0.0  # walks that crossed have stopped
        previous = n
    return Design(looks, budget, tuple(needed), tuple(crossed), tuple(survivors))


def bounds(ratios: list[float], design_: Design) -> tuple[float | None, float | None]:
    """The repeated confidence bounds at the last look: the c-th smallest and c-th largest ratio.

    The lower bound is above the threshold exactly when at least c ratios are, so adopting when it
    clears the threshold is the sign test's decision; None while no count can decide.
    """
    c, n = design_.needed[-1], len(ratios)
    if c > n:
        return None, None
    ordered = sorted(ratios)
    return ordered[n - c], ordered[c - 1]


def first_decidable(budget: int, alpha: float = ALPHA) -> int:
    """The fewest pairs a first look needs to decide at all under this budget (every pair on one side)."""
    n = 1
    while 0.5 ** n > spent(n / max(budget, 1), alpha) * (1 + 1e-9):
        n += 1
    return n
