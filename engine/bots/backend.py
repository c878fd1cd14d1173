"""Picks EquityBot's twin: the Cython kernel from native, or the pure-Python reference.

The Cython twin is used when optseq.native._equity imports. OPTSEQ_PUREPYTHON=1 forces the
Python twin, as MSGPACK_PUREPYTHON does for msgpack; so does a missing extension.
Every entry point checks its inputs here, so neither kernel sees a bad argument.
"""
from __future__ import annotations

import operator
import os
from typing import Callable, Sequence

from optseq.engine.bots import equity as _python
from optseq.engine.games.cards import check_card

PUREPYTHON_ENV = "OPTSEQ_PUREPYTHON"
MAX_U64 = (1 << 64) - 1
MAX_ROLLOUTS = 1 << 24  # keeps 2 * rollouts exact in a C int and in a double
MAX_CHIPS = 1 << 52  # pot + to_call stays exact in a double, so both twins see the same pot odds

Act = Callable[..., tuple[int, float]]


def forced_python() -> bool:
    return os.environ.get(PUREPYTHON_ENV, "") not in ("", "0")


def _import_native():
    try:
        from optseq.native import _equity
    except ImportError:
        return None
    return _equity


_native = None if forced_python() else _import_native()


def name() -> str:
    """Which twin opponent_act runs: "cython" or "python"."""
    return "cython" if _native is not None else "python"


def native_status() -> str | None:
    """None when the Cython twin can run here, else why not."""
    if forced_python():
        return f"native twin disabled by {PUREPYTHON_ENV}=1"
    if _native is None:
        return "native extension not compiled"
    return None


def check_inputs(hole: Sequence[int], board: Sequence[int], pot: int, to_call: int, can_raise: bool,
                 game_id: int, decision_index: int, rollouts: int) -> tuple:
    """The arguments as plain Python values, or ValueError naming the first bad one."""
    hole = _cards(hole, "hole")
    board = _cards(board, "board")
    if len(hole) != 2:
        raise ValueError(f"opponent_act: hole needs 2 cards, got {len(hole)}")
    if len(board) > _python.BOARD_SIZE:
        raise ValueError(f"opponent_act: board holds at most {_python.BOARD_SIZE} cards, got {len(board)}")
    if len(set(hole + board)) != len(hole) + len(board):
        raise ValueError(f"opponent_act: hole {hole} and board {board} repeat a card")
    rollouts = _count(rollouts, "rollouts", MAX_ROLLOUTS)
    if rollouts < 1:
        raise ValueError("opponent_act: rollouts must be at least 1")
    return (hole, board, _count(pot, "pot", MAX_CHIPS), _count(to_call, "to_call", MAX_CHIPS),
            bool(can_raise), _count(game_id, "game_id", MAX_U64),
            _count(decision_index, "decision_index", MAX_U64), rollouts)


def python_act(hole, board, pot, to_call, can_raise, game_id, decision_index,
               rollouts=_python.DEFAULT_ROLLOUTS) -> tuple[int, float]:
    """The pure-Python twin, inputs checked."""
    return _python.opponent_act(*check_inputs(hole, board, pot, to_call, can_raise, game_id,
                                              decision_index, rollouts))


def cython_act(hole, board, pot, to_call, can_raise, game_id, decision_index,
               rollouts=_python.DEFAULT_ROLLOUTS) -> tuple[int, float]:
    """The Cython twin, inputs checked; RuntimeError when it cannot run here."""
    checked = check_inputs(hole, board, pot, to_call, can_raise, game_id, decision_index, rollouts)
    if _native is None:
        raise RuntimeError(f"opponent_act: {native_status()}")
    return _native.opponent_act(*checked, _python.RAISE_EQUITY)


def twin(kind: str) -> Act:
    """The checked opponent_act of one twin by name ("python" or "cython")."""
    twins = {"python": python_act, "cython": cython_act}
    if kind not in twins:
        raise ValueError(f"twin: {kind!r} is not one of {sorted(twins)}")
    return twins[kind]


def opponent_act(hole: Sequence[int], board: Sequence[int], pot: int, to_call: int, can_raise: bool,
                 game_id: int, decision_index: int,
                 rollouts: int = _python.DEFAULT_ROLLOUTS) -> tuple[int, float]:
    """(action, equity) from the selected twin; same result from either."""
    act = cython_act if _native is not None else python_act
    return act(hole, board, pot, to_call, can_raise, game_id, decision_index, rollouts)


def _cards(cards: Sequence[int], what: str) -> tuple[int, ...]:
    cards = tuple(cards)
    # Plain ints in range are the norm and pass at once; anything else is converted or named.
    if all(type(c) is int and 0 <= c < 52 for c in cards):
        return cards
    return tuple(check_card(c, f"opponent_act {what}") for c in cards)


def _count(value: object, what: str, upper: int) -> int:
    if type(value) is int and 0 <= value <= upper:
        return value
    try:
        n = operator.index(value) if not isinstance(value, bool) else -1
    except TypeError:
        raise ValueError(f"opponent_act: {what} must be an integer, got {value!r}") from None
    if not 0 <= n <= upper:
        raise ValueError(f"opponent_act: {what} must be in 0..{upper}, got {value!r}")
    return n
