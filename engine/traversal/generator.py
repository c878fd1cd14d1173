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

from optseq.engine.games.api import Game, State


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
    info: list[float]


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
        if advantages[a] > 0.0:
            total += advantages[a]
    if total > 0.0:
        for a in legal:
            if advantages[a] > 0.0:
                probs[a] = advantages[a] / total
    else:
        best = legal[0]
        for a in legal:
            if advantages[a] > advantages[best]:
                best = a
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


def traverse(game: Game, job: Traversal) -> TraversalGen:
    result = TraversalResult(job)
    rng = random.Random(job.seed)
    result.value = yield from _walk(game.new_initial_state(), job.traverser, float(job.iteration), rng,
                                    result, game.num_actions)
    return result


def _walk(state: State, traverser: int, weight: float, rng: random.Random, out: TraversalResult,
          num_actions: int) -> TraversalGen:
    while state.is_chance():
        state = state.apply(_pick(state.chance_outcomes(), rng))
    if state.is_terminal():
        return state.returns()[traverser]
    player = state.current_player()
    info = state.info_state_tensor(player)
    out.queries += 1
    advantages = yield Query(player, info)
    legal = state.legal_actions()
    strategy = regret_matching(advantages, legal, num_actions)
    if player == traverser:
        values = [0.0] * num_actions
        ev = 0.0
        for a in legal:
            values[a] = yield from _walk(state.apply(a), traverser, weight, rng, out, num_actions)
            ev += strategy[a] * values[a]
        regrets = [0.0] * num_actions
        for a in legal:
            regrets[a] = values[a] - ev
        out.advantage.append(Sample(tuple(info), tuple(regrets), weight))
        return ev
    out.strategy.append(Sample(tuple(info), tuple(strategy), weight))
    action = _pick([(a, strategy[a]) for a in legal], rng)
    return (yield from _walk(state.apply(action), traverser, weight, rng, out, num_actions))
