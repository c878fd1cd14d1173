"""The one state API that Leduc and Flop Hold'em share; algorithms use nothing else.

Actions are the same three for every limit game here: FOLD, CALL (check or call), RAISE (bet or raise).
States are immutable: apply() returns a new state.
"""
from __future__ import annotations

from typing import Iterable, Protocol, Sequence

import numpy as np

FOLD, CALL, RAISE = 0, 1, 2
NUM_ACTIONS = 3
CHANCE = -1
TERMINAL = -2


class InfoRow(tuple):
    """An info-state tensor (a tuple of floats) that also holds its float32 bytes.

    Games that hand out the same row for an information set again and again (Leduc remembers them)
    return these, so a driver builds a batch by joining bytes instead of parsing nested floats: at
    K = 64 the parse cost more than a third of the batched forward.
    """

    f32: bytes

    def __new__(cls, values: Iterable[float]) -> "InfoRow":
        row = super().__new__(cls, values)
        row.f32 = np.asarray(row, dtype=np.float32).tobytes()
        return row


class State(Protocol):
    def current_player(self) -> int:
        """0 or 1, CHANCE while a card is dealt, TERMINAL when the hand is over."""

    def is_terminal(self) -> bool: ...

    def is_chance(self) -> bool: ...

    def legal_actions(self) -> list[int]:
        """Subset of (FOLD, CALL, RAISE) for the player to act; empty at chance and terminal nodes."""

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """(card, probability) pairs at a chance node."""

    def apply(self, action: int) -> "State":
        """A player action, or a card at a chance node."""

    def returns(self) -> tuple[float, float]:
        """Terminal utilities in chips, zero-sum."""

    def info_state_key(self, player: int) -> str:
        """Identifies the information set of `player` (what that player has seen)."""

    def info_state_tensor(self, player: int) -> Sequence[float]:
        """Fixed-width encoding of the information set, Game.info_state_size long."""


class Game(Protocol):
    name: str
    num_players: int
    num_actions: int
    info_state_size: int

    def new_initial_state(self) -> State: ...
