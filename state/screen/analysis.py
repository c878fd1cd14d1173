"""A screen's fit: each lever's main effect and each estimable two-factor interaction, as ratios, from all blocks.

The model is linear in the log of the speed (the metric, or its inverse where lower is better): an intercept, one
term per block past the first (a block is one replicate, launched together: its own level of the machine's speed),
a ±1 column per lever and the product columns of the interactions the design can tell apart. A lever's ratio is
exp(2β), its speed with its change over without it, averaged over the other levers; an interaction a×b is a's ratio
with b on over a's ratio with b off, exp(4β). The fit is Huber's M-estimator (k = 1.345, scale from the residuals'
MAD, iteratively reweighted least squares): a stall makes one launch 1.5-5× slow, which least squares spreads over
every effect whose column it sits in; Huber's weights take it down to a residual of k scales. Intervals are
t intervals on n − p degrees of freedom with Huber's (1981) variance and its small-sample correction.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from optseq.state.screen.design import TIMES, Design

HUBER_K = 1.345
"""95% efficient at normal noise (Huber 1981): the price of its robustness where there is none to need."""
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
    """Observations the robust fit gave less than half a weight: stalls, mostly."""
    extra: dict = field(default_factory=dict, compare=False)

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
    beta, scale, weights, cov = _huber(X, y, np)
    df = n - p
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
    return Fit(mains, inter, len(blocks), n, df, float(scale), int((weights < 0.5).sum()))


def _huber(X, y, np):
    """Huber's M-estimate by IRLS: (β, scale, weights, covariance of β)."""
    n, p = X.shape
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    resid = y - X @ beta
    ols_scale = math.sqrt(float(resid @ resid) / (n - p))
    weights = np.ones(n)
    scale = ols_scale
    for _ in range(50):
        mad = float(np.median(np.abs(resid - np.median(resid)))) / 0.6745
        scale = mad if mad > 1e-12 else ols_scale
        if scale <= 1e-15:
            break
        u = np.abs(resid) / scale
        weights = np.where(u <= HUBER_K, 1.0, HUBER_K / np.maximum(u, 1e-300))
        W = np.sqrt(weights)
        new = np.linalg.lstsq(X * W[:, None], y * W, rcond=None)[0]
        done = float(np.max(np.abs(new - beta))) < 1e-10
        beta = new
        resid = y - X @ beta
        if done:
            break
    xtx_inv = np.linalg.inv(X.T @ X)
    if scale <= 1e-15:
        return beta, 0.0, weights, np.zeros((p, p))
    u = resid / scale
    psi = np.clip(u, -HUBER_K, HUBER_K)
    dpsi = (np.abs(u) <= HUBER_K).astype(float)
    m = float(dpsi.mean())
    if m <= 0:
        return beta, scale, weights, xtx_inv * ols_scale ** 2
    var_dpsi = float(dpsi.var())
    correction = 1.0 + (p / n) * var_dpsi / m ** 2
    # Huber (1981) eq. 7.6.x, statsmodels RLM's H1: K² · Σψ²/(n−p) / (Σψ'/n)² · scale² · (X'X)⁻¹
    cov = correction ** 2 * (float((psi ** 2).sum()) / (n - p)) / m ** 2 * scale ** 2 * xtx_inv
    return beta, scale, weights, cov
