"""A policy's win rate against EquityBot on Flop Hold'em, in mbb/hand with a 95% confidence interval.

Hands are played in duplicate pairs: the same deal twice, the policy in each seat once,
which cancels most of the luck of the cards. The confidence interval treats each pair
as one independent sample.
"""
from __future__ import annotations

import math
import random
import statistics
import zlib
from dataclasses import dataclass
from typing import Callable, Sequence

from optseq.engine.bots import backend
from optseq.engine.bots.equity import DEFAULT_ROLLOUTS
from optseq.engine.games.api import NUM_ACTIONS, RAISE
from optseq.engine.games.cards import DECK
from optseq.engine.games.flop_holdem import BIG_BLIND, FlopHoldem, FlopHoldemState

Policy = Callable[[FlopHoldemState], Sequence[float]]
"""Maps the state where the policy acts to probabilities of (FOLD, CALL, RAISE); illegal
actions may carry weight, it is dropped."""

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Result:
    """The policy's win rate against EquityBot."""

    mbb_per_hand: float
    """Milli-big-blinds won per hand (negative: the policy loses)."""
    ci_low: float
    ci_high: float
    hands: int


def uniform_policy(state: FlopHoldemState) -> list[float]:
    """Every legal action equally likely."""
    legal = state.legal_actions()
    return [1.0 / len(legal) if a in legal else 0.0 for a in range(NUM_ACTIONS)]


def equity_bot_action(state: FlopHoldemState, game_id: int, decision_index: int,
                      rollouts: int = DEFAULT_ROLLOUTS) -> int:
    """EquityBot's action for the player to act in `state`."""
    player = state.current_player()
    action, _ = backend.opponent_act(state.hole_cards(player), state.board(), state.pot(),
                                     state.to_call(), RAISE in state.legal_actions(),
                                     game_id, decision_index, rollouts)
    return action


def equity_bot_policy(rollouts: int = DEFAULT_ROLLOUTS) -> Policy:
    """EquityBot as a policy, for the bot-against-itself sanity check.

    Its draws are seeded from what it sees (its information state), so they do not
    depend on the opposing bot's.
    """
    def policy(state: FlopHoldemState) -> list[float]:
        key = state.info_state_key(state.current_player())
        game_id = zlib.crc32(key.encode()) | (1 << 40)
        action = equity_bot_action(state, game_id, 0, rollouts)
        return [1.0 if a == action else 0.0 for a in range(NUM_ACTIONS)]

    return policy


def play_hand(policy: Policy, policy_seat: int, deck: Sequence[int], game_id: int,
              rollouts: int, rng: random.Random) -> float:
    """Chips the policy wins in one hand dealt from the top of `deck`."""
    state = FlopHoldem().new_initial_state()
    cards = iter(deck)
    bot_decisions = 0
    while not state.is_terminal():
        if state.is_chance():
            state = state.apply(next(cards))
        elif state.current_player() == policy_seat:
            state = state.apply(_sample(policy(state), state, rng))
        else:
            state = state.apply(equity_bot_action(state, game_id, bot_decisions, rollouts))
            bot_decisions += 1
    return state.returns()[policy_seat]


def head_to_head(policy: Policy, hands: int, seed: int = 0,
                 rollouts: int = DEFAULT_ROLLOUTS) -> Result:
    """Play `hands` seeded hands (duplicate pairs, seats alternating) against EquityBot."""
    if isinstance(hands, bool) or not isinstance(hands, int) or hands < 4 or hands % 2:
        raise ValueError(f"head_to_head: hands must be an even int >= 4 (duplicate pairs), got {hands!r}")
    pair_mbb = []
    for k in range(hands // 2):
        deck = list(DECK)
        random.Random(f"deal:{seed}:{k}").shuffle(deck)
        rng = random.Random(f"act:{seed}:{k}")
        chips = sum(play_hand(policy, seat, deck, 2 * k + seat, rollouts, rng) for seat in (0, 1))
        pair_mbb.append(chips / 2 / BIG_BLIND * 1000.0)
    mean = statistics.fmean(pair_mbb)
    half = Z95 * statistics.stdev(pair_mbb) / math.sqrt(len(pair_mbb))
    return Result(mean, mean - half, mean + half, hands)


def _sample(probs: Sequence[float], state: FlopHoldemState, rng: random.Random) -> int:
    legal = state.legal_actions()
    if len(probs) != NUM_ACTIONS:
        raise ValueError(f"head_to_head: policy returned {len(probs)} probabilities, expected {NUM_ACTIONS}")
    weights = [float(probs[a]) for a in legal]
    total = sum(weights)
    if not all(w >= 0.0 for w in weights) or not total > 0.0 or math.isinf(total):
        raise ValueError(f"head_to_head: policy gave no usable weight to legal actions {legal}: {list(probs)}")
    u = rng.random() * total
    for a, w in zip(legal, weights):
        u -= w
        if u < 0.0:
            return a
    return [a for a, w in zip(legal, weights) if w > 0.0][-1]  # u landed on the total by rounding
