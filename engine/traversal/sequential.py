"""The batch-1 driver: one traversal at a time, one network forward per query.

A net is a callable from a float tensor [n, info_state_size] to advantages [n, num_actions]; the
querying player is one-hot inside the info tensor, so one net answers both players.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from optseq.engine.games.api import Game
from optseq.engine.traversal.generator import Traversal, TraversalResult, traverse

Net = Callable[[torch.Tensor], torch.Tensor]


def forward_rows(net: Net, rows: Sequence[Sequence[float]]) -> list[list[float]]:
    """One batched forward from Python rows to Python rows (what every driver calls)."""
    x = torch.from_numpy(batch(rows))
    with torch.inference_mode():
        return net(x).tolist()


def batch(rows: Sequence[Sequence[float]]) -> np.ndarray:
    """float32 [len(rows), width]: joined bytes when every row is an InfoRow, else parsed by numpy."""
    try:
        data = bytearray().join([row.f32 for row in rows])
    except AttributeError:
        # numpy builds the batch from nested lists several times faster than torch.tensor does.
        return np.array(rows, dtype=np.float32)
    return np.frombuffer(data, dtype=np.float32).reshape(len(rows), len(rows[0]) if rows else 0)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic collector while traversals run.

    Traversals make no reference cycles (refcounting frees everything), but with many traversals in
    flight their states outlive a young-generation pass, get promoted, and set off full collections
    that rescan every sample gathered so far: measured at 40% of Option B's time.

    On the way out, what the traversals left alive (their results) goes straight to the oldest
    generation. Otherwise the first allocation after re-enabling runs a young collection over all of
    it: one scan of every sample, found to be 15% of a K=64 run of 2000 Leduc traversals, that could
    only promote them anyway. freeze() then unfreeze() moves every tracked object to the oldest
    generation without scanning; it is skipped when someone else holds objects frozen.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def run(game: Game, net: Net, jobs: Sequence[Traversal]) -> list[TraversalResult]:
    with gc_paused():
        return _run(game, net, jobs)


def _run(game: Game, net: Net, jobs: Sequence[Traversal]) -> list[TraversalResult]:
    results = []
    for job in jobs:
        gen = traverse(game, job)
        try:
            query = next(gen)
            while True:
                query = gen.send(forward_rows(net, (query.info,))[0])
        except StopIteration as stop:
            results.append(stop.value)
    return results


def exact_net(input_dim: int, actions: int, seed: int = 0, hidden: int = 32) -> Net:
    """A deterministic stand-in: a two-layer ReLU net with small integer weights.

    Inputs are 0/1, so every sum is an exact small integer in float32 whatever the batch shape or
    summation order: drivers that batch differently must then produce identical samples.
    """
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randint(-3, 4, (input_dim, hidden), generator=g).float()
    b1 = torch.randint(-2, 3, (hidden,), generator=g).float()
    w2 = torch.randint(-3, 4, (hidden, actions), generator=g).float()

    def net(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w1 + b1) @ w2

    return net
