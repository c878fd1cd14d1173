"""A simulated bench process: launches with their own speed, warm-up, drift, stalls and rounding, in an arm order.

What the decision-quality simulation feeds the real pass loop: each pass is one launch of this model, which
measures the pairs it is asked for the way a real bench does (warm-up calls first, then the pairs, each arm
a call of the one process, in the bench's arm order) and reports throughput samples (higher is better).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

ORDERS = ("baseline first", "alternate", "random")
"""How a bench orders the arms in a pair: the old `kit.paired`, and the two `kit.pairs` orders."""
BASE = 100.0
"""The baseline's true throughput; the candidate's is BASE × the true ratio."""


@dataclass(frozen=True)
class Noise:
    """Everything that moves a measured value away from its arm's true speed."""

    label: str
    sigma: float = 0.0
    """Relative Gaussian noise per sample, independent in each arm."""
    launch_sd: float = 0.0
    """Each launch's own candidate speed: a log-normal factor of median 1 (so the true median ratio holds)."""
    warmup: float = 0.0
    """The first calls of a process are slower by this fraction, fading by e every two calls."""
    drift: float = 0.0
    """Per call of the process: + a steady speed-up (caches, boost), − a throttle."""
    stall_p: float = 0.0
    """The share of the candidate's samples hit by a stall (a GC pause, a recompile)..."""
    stall: tuple[float, float] = (5.0, 20.0)
    """...that makes the call this many times slower (uniform)."""
    outliers: float = 0.0
    """The share of either arm's samples 1.5× slow."""
    digits: int | None = None
    """Significant digits the bench prints (None: full precision)."""
    order: str = "alternate"
    launch_s: float = 2.0
    """Seconds a launch costs before its pairs (start-up, imports, warm-ups)."""
    pair_s: float = 0.25
    """Seconds a pair costs."""
    report_first: bool = True
    """Whether the bench says which arm ran first in each pair (the kit does; the old `kit.paired` did not). Where it
    does not, each sample is written as its arm is measured, and the order they come in is taken for the order."""
    shuffled: bool = field(default=False, repr=False)
    """The launch's samples written in no order (the test before this one read none). Not in the repr, which
    seeds a row (simulate.simulate): every other row keeps the draws it had before it was added."""


def launch(noise: Noise, ratio: float, pairs: int, pass_no: int, token: str, rng: random.Random,
           metric: str = "items_per_s", warmups: int = 1) -> tuple[list[dict], int]:
    """One launch's samples, `pairs` pairs after `warmups` untimed calls of each arm, and how many stalled."""
    offset = math.exp(rng.gauss(0.0, noise.launch_sd)) if noise.launch_sd else 1.0
    true = {"baseline": BASE, "candidate": BASE * ratio * offset}
    call = 2 * warmups  # the warm-up calls heat the process too
    samples, stalls = [], 0
    for pair in range(pairs):
        if noise.order == "baseline first":
            first_base = True
        elif noise.order == "alternate":
            first_base = (pair + pass_no) % 2 == 1  # as the kit: every other launch starts with the candidate
        else:
            first_base = rng.random() < 0.5
        for position, arm in enumerate(("baseline", "candidate") if first_base else ("candidate", "baseline")):
            value, stalled = _measured(noise, true[arm], arm, call, rng)
            call += 1
            stalls += stalled
            sample = {"event": "sample", "arm": arm, "metric": metric, "value": value, "higher_is_better": True,
                      "pair": pair, "run": pass_no, "launch": token}
            if noise.report_first:
                sample["first"] = position == 0
            samples.append(sample)
    if noise.shuffled:
        rng.shuffle(samples)
    return samples, stalls


def _measured(noise: Noise, speed: float, arm: str, call: int, rng: random.Random) -> tuple[float, bool]:
    value = speed * (1 + rng.gauss(0.0, noise.sigma)) if noise.sigma else speed
    value /= 1 + noise.warmup * math.exp(-call / 2)  # a throughput: a slow call is a low value
    value *= 1 + noise.drift * call
    if noise.outliers and rng.random() < noise.outliers:
        value /= 1.5
    stalled = arm == "candidate" and bool(noise.stall_p) and rng.random() < noise.stall_p
    if stalled:
        value /= rng.uniform(*noise.stall)
    value = max(value, 1e-9)
    if noise.digits:
        value = float(f"{value:.{noise.digits}g}")
    return value, stalled
