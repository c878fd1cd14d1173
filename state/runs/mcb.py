"""Hsu's MCB statistics for best of N: Dunnett critical values, their coverage integrals, blocks needed, P(best)."""
from __future__ import annotations

import functools
import math

from optseq.state.runs.stats import SEED, StatsError

CONFIDENCE = 0.95
"""Simultaneous confidence of the MCB intervals."""
N_BOOTSTRAP = 2000
"""Resamples of blocks behind P(best); a display figure, so a modest count."""
MAX_BLOCKS_ESTIMATE = 1_000_000
"""Ceiling of the blocks-needed estimate, for gaps so close to the margin that no budget resolves them."""
ESTIMATE_DF = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 300, 500, 1000,
               2000, 5000, 10_000)
"""The estimate of blocks needed rounds df down to these (a slightly larger d, so it errs towards more
blocks), so that planning costs a few cached critical values rather than one integration per guess."""


@functools.lru_cache(maxsize=None)
def critical_value(comparisons: int, df: float, confidence: float = CONFIDENCE) -> float:
    """The one-sided Dunnett (MCB) quantile d: P(max_i T_i ≤ d) = confidence for `comparisons` statistics
    T_i = (Z_i − Z_0)/(√2·S), Z iid standard normal (so ρ = ½), S² ~ χ²_df/df; df may be math.inf.

    Conditioning on Z_0 and S: P = E_S[∫ φ(z) Φ(z + √2·d·S)^m dz]. The inner integral is Gauss–Hermite
    (smooth integrand), the outer over S adaptive quadrature; d by brentq. With one comparison it is
    Student's t quantile.
    """
    if comparisons < 1 or not df > 0:
        raise StatsError(f"critical value: needs at least one comparison and positive df, got {comparisons}, {df}")
    from scipy import optimize

    return float(optimize.brentq(lambda d: _coverage(d, comparisons, df) - confidence, 0.0, 50.0, xtol=1e-10))


def _coverage(d: float, m: int, df: float) -> float:
    if math.isinf(df):
        return _inner(math.sqrt(2.0) * d, m)
    from scipy import integrate, stats

    chi = stats.chi(df)
    root = math.sqrt(df)
    # S = chi_df/√df; outside these quantiles its density adds less than 1e-13 to P
    lo, hi = chi.ppf(1e-13) / root, chi.isf(1e-13) / root

    def integrand(s: float) -> float:
        return float(chi.pdf(s * root) * root) * _inner(math.sqrt(2.0) * d * s, m)

    return float(integrate.quad(integrand, lo, hi, epsabs=1e-12, epsrel=1e-10, limit=200, points=[1.0])[0])


def _inner(a: float, m: int) -> float:
    """E[Φ(Z + a)^m] for Z standard normal."""
    from scipy import special

    nodes, weights = _hermite()
    return float((special.ndtr(nodes + a) ** m) @ weights)


@functools.lru_cache(maxsize=1)
def _hermite():
    import numpy as np

    # probabilists' Gauss–Hermite: exact for polynomials to degree 191, ample for Φ(z + a)^m
    nodes, weights = np.polynomial.hermite_e.hermegauss(96)
    return nodes, weights / weights.sum()


def blocks_needed(k: int, n: int, sd: float, half_width: float) -> int:
    """Further blocks until d·sd·√(2/b) drops below `half_width`, if the residual SD stays as it is.

    d shrinks as the df grow, so iterate b ← 2(d(b)·sd/half_width)² from the current b; it settles in a few steps.
    """
    if half_width <= 0:  # a gap exactly at the margin: no finite number of blocks is sure to settle it
        return MAX_BLOCKS_ESTIMATE - n
    if sd <= 0:
        return 1
    b = n
    for _ in range(20):
        df = (k - 1) * (b - 1)
        d = critical_value(k - 1, max(g for g in ESTIMATE_DF if g <= df))  # df >= 1: k >= 2, b >= 2
        want = min(MAX_BLOCKS_ESTIMATE, max(n + 1, math.ceil(2.0 * (d * sd / half_width) ** 2)))
        if want == b:
            break
        b = want
    return b - n


def bootstrap_p_best(y) -> list[float]:
    """Share of block resamples in which each config has the lowest mean (the block effects cancel)."""
    import numpy as np

    k, n = y.shape
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, n, size=(N_BOOTSTRAP, n))
    means = y[:, idx].mean(axis=2)  # (k, N_BOOTSTRAP)
    counts = np.bincount(means.argmin(axis=0), minlength=k)
    return [float(c) / N_BOOTSTRAP for c in counts]
