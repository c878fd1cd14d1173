"""Option B: K traversals interleaved in one worker; each step answers all pending queries with ONE forward."""
from __future__ import annotations

from typing import Callable, Sequence

from optseq.engine.games.api import Game
from optseq.engine.traversal.generator import Traversal, TraversalResult, traverse
from optseq.engine.traversal.sequential import Net, forward_rows, gc_paused

Infer = Callable[[list], list]
"""Rows in, rows out: a local forward (Option B) or a request to the central server (A+B)."""


def interleave(game: Game, jobs: Sequence[Traversal], infer: Infer, k: int) -> list[TraversalResult]:
    """Keep up to `k` traversals in flight; a finished one's slot goes to the next job at once."""
    if k < 1:
        raise ValueError(f"option_b: k must be at least 1, got {k}")
    results: list[TraversalResult | None] = [None] * len(jobs)
    todo = iter(range(len(jobs)))
    # Each live slot: [job index, generator, its pending query].
    live: list[list] = []

    def start() -> None:
        for i in todo:
            gen = traverse(game, jobs[i])
            try:
                live.append([i, gen, next(gen)])
                return
            except StopIteration as stop:  # a traversal that asks nothing (a terminal root)
                results[i] = stop.value

    for _ in range(k):
        start()
    while live:
        answers = infer([slot[2].info for slot in live])
        still = []
        for slot, answer in zip(live, answers):
            try:
                slot[2] = slot[1].send(answer)
                still.append(slot)
            except StopIteration as stop:
                results[slot[0]] = stop.value
        finished = len(live) - len(still)
        live[:] = still
        for _ in range(finished):
            start()
    return results


def run(game: Game, net: Net, jobs: Sequence[Traversal], k: int = 64) -> list[TraversalResult]:
    with gc_paused():
        return interleave(game, jobs, lambda rows: forward_rows(net, rows), k)
