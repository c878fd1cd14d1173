"""A screen's fit: each lever's main effect and each estimable two-factor interaction, as ratios, from all blocks.

The model is linear in the log of the speed (the metric, or its inverse where lower is better): an intercept, one
term per block past the first (a block is one replicate, launched together: its own level of the machine's speed),
a ±1 column per lever and the product columns of the interactions the design can tell apart. A lever's ratio is
exp(2β), its speed with its change over without it, averaged over the other levers; an interaction a×b is a's ratio
with b on over a's ratio with b off, exp(4β). A stall makes one launch 1.5-5× slow, which least squares spreads
over every effect whose column it sits in: Huber's M-estimator (k = 1.345, IRLS) finds the launches more than TRIM
robust scales off the fit, and least squares on the others gives the effects, with t intervals on their residual
degrees of freedom.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from optseq.state.screen.design import TIMES, Design

HUBER_K = 1.345
"""95% efficient at normal noise (Huber 1981): the price of its robustness where there is none to need."""
TRIM = 8.0
"""A launch this many robust scales off the fit is set aside: a stall (1.5-5× slow is 20-80 scales at 2% noise),
never a Gaussian launch (while the scale is near the truth)."""
LEVEL = 0.95


class AnalysisError(ValueError):
    """Observations a screen's fit cannot use; str() is one line naming what is wrong."""


@dataclass(frozen=True)
class Observation:
    block: int
    """1-based block number."""
    run: int
    """Index into design.runs."""
    value: float
    """The metric as the workload printed it."""


@dataclass(frozen=True)
class Effect:
    name: str
    """`amp` or `amp×compile`."""
    levers: tuple[str, ...]
    ratio: float
    """Main effect: speed with the lever's change over without it (> 1 faster, whatever the metric's direction).
    Interaction a×b: a's ratio with b on over a's ratio with b off."""
    low: float
    high: float
    """The 95% interval (for display: decisions use screen_passes' sequential bounds)."""
    aliases: tuple[str, ...] = ()
    log_se: float = 0.0
    """Standard error of log(ratio): what the sequential bounds are built from."""
    df: int = 0
    """Degrees of freedom of that error."""

    def to_dict(self) -> dict:
        return {"name": self.name, "levers": list(self.levers), "ratio": self.ratio, "low": self.low,
                "high": self.high, "aliases": list(self.aliases), "log_se": self.log_se, "df": self.df}

    @classmethod
    def from_dict(cls, d: dict) -> Effect:
        return cls(d["name"], tuple(d["levers"]), d["ratio"], d["low"], d["high"], tuple(d.get("aliases", ())),
                   d.get("log_se", 0.0), d.get("df", 0))

    def bounds(self, alpha: float) -> tuple[float, float]:
        """The two-sided 1 − 2·alpha interval on the ratio (alpha per side)."""
        from scipy import stats

        if self.df <= 0 or self.log_se == 0.0:
            return self.ratio, self.ratio
        half = float(stats.t.ppf(1.0 - alpha, self.df)) * self.log_se
        return math.exp(math.log(self.ratio) - half), math.exp(math.log(self.ratio) + half)


@dataclass(frozen=True)
class Fit:
    mains: tuple[Effect, ...]
    """In design.factors order."""
    interactions: tuple[Effect, ...]
    """In design.interactions() order."""
    blocks: int
    runs: int
    """Observations used."""
    residual_df: int
    sigma: float
    """Residual scale on the log metric (Huber's MAD scale)."""
    downweighted: int = 0
    """Launches set aside, more than TRIM robust scales off the fit: stalls, mostly."""

    def effect(self, name: str) -> Effect:
        return next(e for e in self.mains + self.interactions if e.name == name)

    def to_dict(self) -> dict:
        return {"mains": [e.to_dict() for e in self.mains],
                "interactions": [e.to_dict() for e in self.interactions], "blocks": self.blocks,
                "runs": self.runs, "residual_df": self.residual_df, "sigma": self.sigma,
                "downweighted": self.downweighted}

    @classmethod
    def from_dict(cls, d: dict) -> Fit:
        return cls(tuple(Effect.from_dict(e) for e in d["mains"]),
                   tuple(Effect.from_dict(e) for e in d["interactions"]), d["blocks"], d["runs"],
                   d["residual_df"], d["sigma"], d.get("downweighted", 0))


def fit(design: Design, observations: Sequence[Observation], higher_is_better: bool) -> Fit:
    """The main effects and estimable interactions from every observation so far, with a block term."""
    import numpy as np
    from scipy import stats

    obs = list(observations)
    for o in obs:
        if not 0 <= o.run < len(design.runs):
            raise AnalysisError(f"observation of run {o.run} in block {o.block}: the design has runs "
                                f"0 to {len(design.runs) - 1}")
        if o.block < 1:
            raise AnalysisError(f"observation of run {o.run}: block {o.block} (blocks count from 1)")
        if not (isinstance(o.value, (int, float)) and math.isfinite(o.value) and o.value > 0):
            raise AnalysisError(f"run {o.run} in block {o.block} printed {o.value!r}: a screen's metric must be "
                                "a positive number")
    blocks = sorted({o.block for o in obs})
    pairs = design.interactions()
    columns = [(f,) for f in design.factors] + list(pairs)
    n, p = len(obs), 1 + (len(blocks) - 1) + len(columns)
    if n <= p:
        raise AnalysisError(f"{n} observations cannot fit {p} terms ({len(columns)} effects, "
                            f"{len(blocks)} block{'s' * (len(blocks) != 1)}): run more blocks")
    X = np.ones((n, p))
    where = {b: i for i, b in enumerate(blocks[1:], start=1)}
    effect_cols = {c: design.column(c) for c in columns}
    for row, o in enumerate(obs):
        X[row, 1:len(blocks)] = 0.0
        if o.block in where:
            X[row, where[o.block]] = 1.0
        for j, c in enumerate(columns):
            X[row, len(blocks) + j] = effect_cols[c][o.run]
    y = np.log(np.array([o.value for o in obs], dtype=float)) * (1.0 if higher_is_better else -1.0)
    if np.linalg.matrix_rank(X) < p:
        raise AnalysisError("the runs measured so far cannot tell the effects apart: run whole blocks")
    beta, scale, aside, cov, df = _robust(X, y, np)
    t = float(stats.t.ppf(0.5 + LEVEL / 2, df))
    aliases = design.aliases()

    def effect(j: int, levers: tuple[str, ...]) -> Effect:
        k = 2.0 if len(levers) == 1 else 4.0
        b, se = float(beta[len(blocks) + j]), math.sqrt(max(float(cov[len(blocks) + j, len(blocks) + j]), 0.0))
        name = TIMES.join(levers)
        return Effect(name, levers, math.exp(k * b), math.exp(k * (b - t * se)), math.exp(k * (b + t * se)),
                      aliases.get(name, ()), k * se, df)

    mains = tuple(effect(j, c) for j, c in enumerate(columns[:len(design.factors)]))
    inter = tuple(effect(len(design.factors) + j, c) for j, c in enumerate(pairs))
    return Fit(mains, inter, len(blocks), n - aside, df, float(scale), aside)


def _robust(X, y, np):
    """(β, residual scale, observations set aside, covariance of β, residual df).

    Huber's M-estimate (IRLS) with Huber's proposal 2 for the scale, which counts the n − p degrees of freedom the
    residuals have, finds the launches more than TRIM scales off the fit; least squares on the rest gives the
    effects and their t intervals. Two things were tried first and failed in the simulation: Huber's own variance
    (too narrow on so few degrees of freedom) and the MAD for the scale: a fraction fits many terms to few runs (37
    to 64 in a 2^(8-2) block), the fit can pass through more than half of the launches, and the MAD collapses."""
    from scipy import stats

    n, p = X.shape
    k = HUBER_K
    # E ψ(Z)² under the normal: what Σ ψ(r/s)² over n − p degrees of freedom must equal at the right scale
    expected = 2 * stats.norm.cdf(k) - 1 - 2 * k * stats.norm.pdf(k) + 2 * k * k * stats.norm.sf(k)
    lift = 1.0 / np.sqrt(np.clip(1.0 - np.einsum("ij,jk,ik->i", X, np.linalg.pinv(X.T @ X), X), 1e-12, None))
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    resid = y - X @ beta
    scale = math.sqrt(float(resid @ resid) / (n - p))
    for _ in range(100):
        if scale <= 1e-12:
            break
        u = resid / scale
        scale = scale * math.sqrt(float((np.clip(u, -k, k) ** 2).sum()) / ((n - p) * expected))
        u = np.abs(resid * lift) / scale
        W = np.sqrt(np.where(u <= k, 1.0, k / np.maximum(u, 1e-300)))
        new = np.linalg.lstsq(X * W[:, None], y * W, rcond=None)[0]
        done = float(np.max(np.abs(new - beta))) < 1e-10
        beta, resid = new, y - X @ new
        if done:
            break
    keep = np.abs(resid * lift) <= TRIM * scale if scale > 1e-12 else np.ones(n, dtype=bool)
    if int(keep.sum()) - p < 1 or np.linalg.matrix_rank(X[keep]) < p:
        keep = np.ones(n, dtype=bool)  # too few left to fit: every launch counts, stalls and all
    Xk, yk = X[keep], y[keep]
    beta = np.linalg.lstsq(Xk, yk, rcond=None)[0]
    df = int(keep.sum()) - p
    s2 = float(((yk - Xk @ beta) ** 2).sum()) / df
    return beta, math.sqrt(s2), int((~keep).sum()), s2 * np.linalg.inv(Xk.T @ Xk), df
