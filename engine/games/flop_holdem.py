"""Flop Hold'em: 52 cards, 2 hole + 3 board, two limit betting rounds, blinds 50/100, bets 100/200.

Player 0 posts the small blind and acts first preflop; player 1 (big blind) acts first on
the flop, as in heads-up limit hold'em. Each round allows MAX_RAISES bets or raises; a
round closes on a call (or check) once both players have acted in it. Cards are dealt one
per chance node: player 0's two hole cards, player 1's two, then the three board cards
after the preflop round. Showdown compares the five cards each player has.
"""
from __future__ import annotations

from optseq.engine.games import cards as C
from optseq.engine.games.api import CALL, CHANCE, FOLD, NUM_ACTIONS, RAISE, TERMINAL

SMALL_BLIND, BIG_BLIND = 50, 100
BET_SIZES = (100, 200)
MAX_RAISES = 3
NUM_ROUNDS = 2
HOLE_CARDS = 2
BOARD_CARDS = 3
# Longest round: check/limp, MAX_RAISES raises, call.
MAX_ACTIONS_PER_ROUND = MAX_RAISES + 2
FIRST_TO_ACT = (0, 1)
INFO_STATE_SIZE = 2 + C.NUM_CARDS + C.NUM_CARDS + NUM_ROUNDS * MAX_ACTIONS_PER_ROUND * NUM_ACTIONS

_ACTION_CHARS = "fcr"


class FlopHoldemState:
    """One immutable node of a Flop Hold'em hand; apply() returns the next node."""

    __slots__ = ("_cards", "_contrib", "_round", "_history", "_to_act", "_raises", "_folder")

    def __init__(self, dealt: tuple[int, ...], contrib: tuple[int, int], round_: int,
                 history: tuple[tuple[int, ...], ...], to_act: int, raises: int, folder: int | None):
        self._cards = dealt
        self._contrib = contrib
        self._round = round_
        self._history = history
        self._to_act = to_act
        self._raises = raises
        self._folder = folder

    @classmethod
    def initial(cls) -> "FlopHoldemState":
        return cls((), (SMALL_BLIND, BIG_BLIND), 0, ((), ()), FIRST_TO_ACT[0], 0, None)

    # --- the shared State API -------------------------------------------------------------

    def current_player(self) -> int:
        if self._folder is not None or self._round >= NUM_ROUNDS:
            return TERMINAL
        if len(self._cards) < self._cards_needed():
            return CHANCE
        return self._to_act

    def is_terminal(self) -> bool:
        return self.current_player() == TERMINAL

    def is_chance(self) -> bool:
        return self.current_player() == CHANCE

    def legal_actions(self) -> list[int]:
        if self.current_player() < 0:
            return []
        actions = [FOLD] if self.to_call() > 0 else []
        actions.append(CALL)
        if self._raises < MAX_RAISES:
            actions.append(RAISE)
        return actions

    def chance_outcomes(self) -> list[tuple[int, float]]:
        if not self.is_chance():
            return []
        remaining = self._remaining()
        p = 1.0 / len(remaining)
        return [(c, p) for c in remaining]

    def apply(self, action: int) -> "FlopHoldemState":
        player = self.current_player()
        if player == TERMINAL:
            raise ValueError(f"flop_holdem: apply({action!r}) on a finished hand")
        if player == CHANCE:
            c = C.check_card(action, "flop_holdem chance outcome")
            if c in self._cards:
                raise ValueError(f"flop_holdem: card {C.card_str(c)} was already dealt")
            return FlopHoldemState(self._cards + (c,), self._contrib, self._round, self._history,
                                   self._to_act, self._raises, self._folder)
        legal = self.legal_actions()
        if action not in legal:
            raise ValueError(f"flop_holdem: action {action!r} is not legal for player {player}; legal: {legal}")
        return self._act(player, action)

    def returns(self) -> tuple[float, float]:
        if not self.is_terminal():
            return (0.0, 0.0)  # as Leduc and OpenSpiel: nothing is won before the hand ends
        if self._folder is not None:
            loser = self._folder
        else:
            values = [C.evaluate5(self.hole_cards(p) + self.board()) for p in (0, 1)]
            if values[0] == values[1]:
                return (0.0, 0.0)
            loser = 0 if values[0] < values[1] else 1
        lost = float(self._contrib[loser])
        return (-lost, lost) if loser == 0 else (lost, -lost)

    def info_state_key(self, player: int) -> str:
        rounds = "/".join("".join(_ACTION_CHARS[a] for a in r) for r in self._history[: self._round + 1])
        return f"{player}|{C.cards_str(self.hole_cards(player))}|{C.cards_str(self.board())}|{rounds}"

    def info_state_tensor(self, player: int) -> list[float]:
        """Seat one-hot (2), own hole cards one-hot (52), board one-hot (52), then for each
        round and action slot a one-hot of the action taken (fold, call, raise)."""
        t = [0.0] * INFO_STATE_SIZE
        t[player] = 1.0
        for c in self.hole_cards(player):
            t[2 + c] = 1.0
        for c in self.board():
            t[2 + C.NUM_CARDS + c] = 1.0
        base = 2 + 2 * C.NUM_CARDS
        for r, actions in enumerate(self._history):
            for slot, a in enumerate(actions):
                t[base + (r * MAX_ACTIONS_PER_ROUND + slot) * NUM_ACTIONS + a] = 1.0
        return t

    # --- what a bot needs -----------------------------------------------------------------

    def hole_cards(self, player: int) -> tuple[int, ...]:
        start = player * HOLE_CARDS
        return self._cards[start: start + HOLE_CARDS]

    def board(self) -> tuple[int, ...]:
        return self._cards[2 * HOLE_CARDS:]

    def pot(self) -> int:
        return self._contrib[0] + self._contrib[1]

    def contributions(self) -> tuple[int, int]:
        return self._contrib

    def to_call(self) -> int:
        """Chips the player to act must add to match the other player's stake."""
        p = self._to_act
        return self._contrib[1 - p] - self._contrib[p]

    def round(self) -> int:
        """0 preflop, 1 flop, NUM_ROUNDS once the betting is over."""
        return self._round

    def raises_this_round(self) -> int:
        return self._raises

    def history(self) -> tuple[tuple[int, ...], ...]:
        """Actions taken, one tuple per round."""
        return self._history

    def __repr__(self) -> str:
        return (f"FlopHoldemState(cards={C.cards_str(self._cards)!r}, contrib={self._contrib}, "
                f"round={self._round}, history={self._history}, to_act={self._to_act})")

    # --- internals ------------------------------------------------------------------------

    def _cards_needed(self) -> int:
        return 2 * HOLE_CARDS + (BOARD_CARDS if self._round >= 1 else 0)

    def _remaining(self) -> list[int]:
        dealt = set(self._cards)
        return [c for c in C.DECK if c not in dealt]

    def _act(self, player: int, action: int) -> "FlopHoldemState":
        other = 1 - player
        contrib = list(self._contrib)
        round_actions = self._history[self._round] + (action,)
        history = list(self._history)
        history[self._round] = round_actions
        history = tuple(history)
        if action == FOLD:
            return FlopHoldemState(self._cards, self._contrib, self._round, history, player,
                                   self._raises, player)
        if action == RAISE:
            contrib[player] = contrib[other] + BET_SIZES[self._round]
            return FlopHoldemState(self._cards, tuple(contrib), self._round, history, other,
                                   self._raises + 1, None)
        contrib[player] = contrib[other]
        if len(round_actions) >= 2:  # both have acted and stakes are level: the round closes
            next_round = self._round + 1
            to_act = FIRST_TO_ACT[next_round] if next_round < NUM_ROUNDS else player
            return FlopHoldemState(self._cards, tuple(contrib), next_round, history, to_act, 0, None)
        return FlopHoldemState(self._cards, tuple(contrib), self._round, history, other,
                               self._raises, None)


class FlopHoldem:
    """The Game: builds initial states and describes the encoding sizes."""

    name = "flop_holdem"
    num_players = 2
    num_actions = NUM_ACTIONS
    info_state_size = INFO_STATE_SIZE

    def new_initial_state(self) -> FlopHoldemState:
        return FlopHoldemState.initial()
