"""EquityBot, pure-Python reference: Monte Carlo equity against a random hand, then pot odds.

The Cython twin (native/_equity.pyx) follows this file step for step — same PRNG, same
card order, same integer score — so both return bit-identical equities and actions.
Callers go through engine.bots.backend, which validates inputs and picks the twin.
"""
from __future__ import annotations

from typing import Sequence

from optseq.engine.games.api import CALL, FOLD, RAISE
from optseq.engine.games.cards import NUM_CARDS, evaluate5

DEFAULT_ROLLOUTS = 100
RAISE_EQUITY = 0.62
"""Equity at or above which the bot bets or raises when it may."""

BOARD_SIZE = 3
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SEED_MIX = 0xC2B2AE3D27D4EB4F


def seed_for(game_id: int, decision_index: int) -> int:
    """The PRNG seed of one decision, so equities never depend on the order of calls."""
    return ((game_id * GOLDEN) ^ (decision_index * SEED_MIX)) & MASK64


class SplitMix64:
    """Vigna's splitmix64: 64-bit state, one add and a mixing function per draw."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + GOLDEN) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A draw in 0..n-1 (n < 2**32) from the top 32 bits by multiply-shift, which
        avoids a division; its bias (about n / 2**32) is far below Monte Carlo noise."""
        return ((self.next() >> 32) * n) >> 32


def equity(hole: Sequence[int], board: Sequence[int], game_id: int, decision_index: int,
           rollouts: int) -> float:
    """Share of the pot `hole` wins against a uniformly random opponent hand.

    Each rollout deals the opponent's two cards and the missing board cards from the
    unseen cards by a partial Fisher-Yates shuffle of one array that carries over between
    rollouts; a win scores 2, a tie 1, so the total stays an integer.
    """
    rng = SplitMix64(seed_for(game_id, decision_index))
    known = set(hole) | set(board)
    unseen = [c for c in range(NUM_CARDS) if c not in known]
    n = len(unseen)
    need = 2 + BOARD_SIZE - len(board)
    hole = list(hole)
    board = list(board)
    score = 0
    for _ in range(rollouts):
        for i in range(need):
            j = i + rng.below(n - i)
            unseen[i], unseen[j] = unseen[j], unseen[i]
        full_board = board + unseen[2:need]
        mine = evaluate5(hole + full_board)
        theirs = evaluate5(unseen[0:2] + full_board)
        if mine > theirs:
            score += 2
        elif mine == theirs:
            score += 1
    return score / (2 * rollouts)


def decide(equity_: float, pot: int, to_call: int, can_raise: bool) -> int:
    """Raise when strong enough and allowed; fold when equity is below pot odds; else call.

    Checking is never folded: with nothing to call, pot odds are zero.
    """
    if can_raise and equity_ >= RAISE_EQUITY:
        return RAISE
    if to_call > 0 and equity_ < to_call / (pot + to_call):
        return FOLD
    return CALL


def opponent_act(hole: Sequence[int], board: Sequence[int], pot: int, to_call: int, can_raise: bool,
                 game_id: int, decision_index: int, rollouts: int = DEFAULT_ROLLOUTS) -> tuple[int, float]:
    """(action, equity) for the bot holding `hole` with `board` showing; inputs unchecked."""
    e = equity(hole, board, game_id, decision_index, rollouts)
    return decide(e, pot, to_call, can_raise), e
