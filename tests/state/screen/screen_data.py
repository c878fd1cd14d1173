"""Observations of a screen with known effects: every lever's ratio, one interaction, block offsets, seeded noise."""
from __future__ import annotations

import math
import random

from optseq.state.screen.analysis import Observation


def speed(design, run: int, mains: dict, pair: tuple[str, str] | None = None, inter: float = 1.0) -> float:
    """100 × each lever's ratio centred on its two levels (exp(2β) between them); the interaction as a ratio of
    ratios exp(4β) on the product column."""
    log = 0.0
    for f, x in zip(design.factors, design.runs[run]):
        log += x * math.log(mains[f]) / 2
    if pair:
        log += design.column(pair)[run] * math.log(inter) / 4
    return 100.0 * math.exp(log)


def observations(design, blocks: int, offsets=None, noise=0.0, seed=1, first: int = 1, **kw) -> list[Observation]:
    """Blocks `first` .. `first + blocks - 1`, every run of the block once (one half a block of a folded design),
    each block's own speed from `offsets`."""
    rng = random.Random(f"{seed}:{first}")
    out = []
    for b in range(first, first + blocks):
        for run in design.block_indices(b):
            v = speed(design, run, **kw) * (offsets[b - first] if offsets else 1.0)
            out.append(Observation(b, run, v * math.exp(rng.gauss(0, noise)) if noise else v))
    return out
