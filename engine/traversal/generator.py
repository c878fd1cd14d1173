"""Deep CFR external-sampling traversal, written once as a generator that yields its network queries.

`traverse(game, job)` yields `Query(player, info)`; the driver answers with that player's advantages
(a sequence of game.num_actions floats) through send(). The generator returns a TraversalResult.
All randomness (chance cards, the opponent's sampled actions) comes from the job's own seeded RNG,
so a traversal's samples depend only on its job and on the answers, never on how drivers interleave.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Generator, NamedTuple, Sequence

import numpy as np

from optseq.engine.bots.backend import forced_python
from optseq.engine.games.api import CHANCE, TERMINAL, Game


@dataclass(frozen=True)
class Traversal:
    """One external-sampling traversal to run."""

    traverser: int
    """The player whose actions are all explored and whose regrets are recorded."""
    iteration: int
    """CFR iteration t; samples are weighted by t (linear CFR)."""
    seed: int
    """Seed of the traversal's private RNG."""


class Query(NamedTuple):
    """A request for `player`'s advantages at the information set encoded by `info`."""

    player: int
    info: tuple[float, ...]
    """The game's tensor as a tuple (Leduc's are InfoRows, which batch as joined bytes)."""


class Sample(NamedTuple):
    """One training row: info-state tensor, regression target over all actions, iteration weight."""

    info: tuple[float, ...]
    target: tuple[float, ...]
    weight: float


@dataclass
class TraversalResult:
    job: Traversal
    advantage: list[Sample] = field(default_factory=list)
    """Instantaneous regrets at the traverser's information sets."""
    strategy: list[Sample] = field(default_factory=list)
    """Regret-matched strategies at the opponent's information sets (trains the average policy)."""
    value: float = 0.0
    """Sampled value of the root to the traverser."""
    queries: int = 0


TraversalGen = Generator[Query, Sequence[float], TraversalResult]


def jobs_for(seed: int, iteration: int, traverser: int, count: int) -> list[Traversal]:
    """`count` traversals whose seeds derive from (seed, iteration, traverser, index) alone."""
    jobs = []
    for i in range(count):
        state = np.random.SeedSequence([seed, iteration, traverser, i]).generate_state(2, dtype=np.uint32)
        jobs.append(Traversal(traverser, iteration, int(state[0]) << 32 | int(state[1])))
    return jobs


def regret_matching(advantages: Sequence[float], legal: Sequence[int], num_actions: int) -> list[float]:
    """Positive advantages normalised; when none is positive, all weight on the best legal action (Deep CFR)."""
    probs = [0.0] * num_actions
    total = 0.0
    for a in legal:
        v = advantages[a]
        if v > 0.0:
            total += v
    if total > 0.0:
        for a in legal:
            v = advantages[a]
            if v > 0.0:
                probs[a] = v / total
    else:
        best = legal[0]
        top = advantages[best]
        for a in legal:
            v = advantages[a]
            if v > top:
                best, top = a, v
        probs[best] = 1.0
    return probs


def _pick(pairs, rng: random.Random) -> int:
    """Draw from (outcome, probability) pairs with one uniform number."""
    u = rng.random()
    acc = 0.0
    for outcome, p in pairs:
        acc += p
        if u < acc:
            return outcome
    # Rounding can leave u just above the running sum: take the last outcome that had any weight.
    return next(o for o, p in reversed(pairs) if p > 0)


def python_traverse(game: Game, job: Traversal) -> TraversalGen:
    """The recursive external-sampling walk, run on an explicit stack (the reference twin).

    One generator frame per traversal instead of a chain of delegating ones: a send() into a
    `yield from` chain resumes every frame down to the query, and the walk is what bounds Option B.
    Queries, RNG draws and samples come in the same order as the recursive form did (a test pins
    the samples it gave). Queries and samples are built with tuple.__new__, skipping the Python-level
    NamedTuple constructor, and a sample shares its info row when the game hands out tuples.
    """
    result = TraversalResult(job)
    rng = random.Random(job.seed)
    traverser = job.traverser
    weight = float(job.iteration)
    num_actions = game.num_actions
    advantage_out = result.advantage.append
    strategy_out = result.strategy.append
    pick, match, draw, new = _pick, regret_matching, rng.random, tuple.__new__
    # One frame per traverser node whose actions are being explored: [state, info, legal, strategy, values, next].
    stack: list[list] = []
    state = game.new_initial_state()
    queries = 0
    while True:
        # current_player() alone tells chance, terminal and turn apart: one call per node, not three.
        player = state.current_player()
        while player == CHANCE:
            state = state.apply(pick(state.chance_outcomes(), rng))
            player = state.current_player()
        if player != TERMINAL:
            info = state.info_state_tensor(player)
            if not isinstance(info, tuple):
                info = tuple(info)
            queries += 1
            advantages = yield new(Query, (player, info))
            legal = state.legal_actions()
            strategy = match(advantages, legal, num_actions)
            if player == traverser:
                stack.append([state, info, legal, strategy, [0.0] * num_actions, 1])
                state = state.apply(legal[0])
            else:
                strategy_out(new(Sample, (info, tuple(strategy), weight)))
                # _pick over (a, strategy[a]) pairs, without building them.
                u = draw()
                acc = 0.0
                for a in legal:
                    acc += strategy[a]
                    if u < acc:
                        break
                else:
                    a = next(a for a in reversed(legal) if strategy[a] > 0)
                state = state.apply(a)
            continue
        value = state.returns()[traverser]
        # Hand the value up: to the frame whose next action it answers, closing every frame it completes.
        while stack:
            frame = stack[-1]
            node, info, legal, strategy, values, i = frame
            values[legal[i - 1]] = value
            if i < len(legal):
                frame[5] = i + 1
                state = node.apply(legal[i])
                break
            stack.pop()
            ev = 0.0
            for a in legal:
                ev += strategy[a] * values[a]
            regrets = [0.0] * num_actions
            for a in legal:
                regrets[a] = values[a] - ev
            advantage_out(new(Sample, (info, tuple(regrets), weight)))
            value = ev
        else:
            result.value = value
            result.queries = queries
            return result


def _import_native():
    try:
        from optseq.native import _traverse
    except ImportError:
        return None
    return _traverse


_native = None if forced_python() else _import_native()


def native_traverse(game: Game, job: Traversal) -> TraversalGen:
    """python_traverse's Cython twin (native/_traverse.pyx): the same queries, draws and samples, bit for bit."""
    if _native is None:
        raise RuntimeError("native_traverse: the native extension is not compiled or is disabled")
    return _native.walk(game, TraversalResult(job), job.seed, job.traverser, float(job.iteration),
                        Query, Sample, CHANCE, TERMINAL)


# What every driver runs. The walk bounds Option B once a forward answers 64 queries, and the twin
# takes its bookkeeping to C; OPTSEQ_PUREPYTHON=1, or a build without the extension, keeps the reference.
traverse = native_traverse if _native is not None else python_traverse
