"""Leduc Hold'em on the shared state API, with OpenSpiel's rules so published figures apply.

Six cards (J, Q, K in two suits; card c has rank c // 2), one chip ante each, one private card,
one public card after the first betting round. Limit betting: raises of 2 then 4, at most two
raises a round, player 0 opens both rounds, folding only when facing a bet. A pair with the
public card beats any high card; otherwise the higher rank wins and equal ranks split.
"""
from __future__ import annotations

from optseq.engine.games.api import CALL, CHANCE, FOLD, NUM_ACTIONS, RAISE, TERMINAL, InfoRow

NUM_CARDS = 6
RANKS = "JQK"
SUITS = "sh"
ANTE = 1
RAISE_SIZES = (2, 4)
MAX_RAISES = 2
# Longest betting sequence in one round: check, raise, raise, call.
MAX_ROUND_ACTIONS = 4
_ACTION_CHARS = "fcr"

# Tensor layout: acting-player one-hot, private rank, public rank, then per round and slot a
# (call, raise) pair. Suits are left out on purpose: no flushes, so two cards of a rank play alike.
_PRIVATE = 2
_PUBLIC = _PRIVATE + 3
_BETTING = _PUBLIC + 3
INFO_STATE_SIZE = _BETTING + 2 * MAX_ROUND_ACTIONS * 2


def card_name(card: int) -> str:
    return RANKS[card // 2] + SUITS[card % 2]


class LeducState:
    """An immutable Leduc position; apply() returns the next one.

    Each position remembers its successors, legal actions, deals and info tensors once computed: a
    traversal from a game's shared root then meets every node of the small Leduc tree as a lookup,
    which matters because the Python walk, not the net, bounds batched traversal (Option B).
    """

    __slots__ = ("private", "public", "rounds", "round", "player", "contrib", "raises", "calls", "folded",
                 "_next", "_legal", "_chance", "_info", "_returns")

    def __init__(self, private=(), public=-1, rounds=((), ()), round=0, player=CHANCE,
                 contrib=(ANTE, ANTE), raises=0, calls=0, folded=-1):
        self.private: tuple[int, ...] = private
        self.public: int = public
        self.rounds: tuple[tuple[int, ...], tuple[int, ...]] = rounds
        self.round: int = round
        self.player: int = player
        self.contrib: tuple[int, int] = contrib
        self.raises: int = raises
        self.calls: int = calls
        self.folded: int = folded
        self._next: dict[int, LeducState] = {}
        self._legal: tuple[int, ...] | None = None
        self._chance: tuple[tuple[int, float], ...] | None = None
        self._info: list[InfoRow | None] = [None, None]
        self._returns: tuple[float, float] | None = None

    # -- the State protocol -------------------------------------------------------------------
    def current_player(self) -> int:
        return self.player

    def is_terminal(self) -> bool:
        return self.player == TERMINAL

    def is_chance(self) -> bool:
        return self.player == CHANCE

    def legal_actions(self) -> list[int]:
        legal = self._legal
        if legal is None:
            legal = self._legal = tuple(self._legal_actions())
        return list(legal)

    def _legal_actions(self) -> list[int]:
        if self.player < 0:
            return []
        actions = [FOLD, CALL] if self.contrib[self.player] < self.contrib[1 - self.player] else [CALL]
        if self.raises < MAX_RAISES:
            actions.append(RAISE)
        return actions

    def chance_outcomes(self) -> list[tuple[int, float]]:
        chance = self._chance
        if chance is None:
            chance = self._chance = tuple(self._chance_outcomes())
        return list(chance)

    def _chance_outcomes(self) -> list[tuple[int, float]]:
        if self.player != CHANCE:
            return []
        dealt = self.private + ((self.public,) if self.public >= 0 else ())
        left = [c for c in range(NUM_CARDS) if c not in dealt]
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    def apply(self, action: int) -> "LeducState":
        child = self._next.get(action)
        if child is None:
            child = self._next[action] = self._successor(action)
        return child

    def _successor(self, action: int) -> "LeducState":
        if self.player == CHANCE:
            return self._deal(action)
        if self.player == TERMINAL:
            raise ValueError("apply: the hand is over")
        p = self.player
        if not (action == CALL or (action == RAISE and self.raises < MAX_RAISES)
                or (action == FOLD and self.contrib[p] < self.contrib[1 - p])):
            raise ValueError(f"apply: action {action} is not legal here (legal: {self.legal_actions()})")
        rounds = _append(self.rounds, self.round, action)
        if action == FOLD:
            return LeducState(self.private, self.public, rounds, self.round, TERMINAL,
                              self.contrib, self.raises, self.calls, p)
        high = max(self.contrib)
        if action == CALL:
            contrib = _set(self.contrib, p, high)
            calls = self.calls + 1
            # A round closes on check-check, or on the call of the last raise.
            if calls == (2 if self.raises == 0 else 1):
                if self.round == 0:
                    return LeducState(self.private, self.public, rounds, 1, CHANCE, contrib, 0, 0)
                return LeducState(self.private, self.public, rounds, 1, TERMINAL, contrib, self.raises, calls)
            return LeducState(self.private, self.public, rounds, self.round, 1 - p, contrib, self.raises, calls)
        contrib = _set(self.contrib, p, high + RAISE_SIZES[self.round])
        return LeducState(self.private, self.public, rounds, self.round, 1 - p, contrib, self.raises + 1, 0)

    def returns(self) -> tuple[float, float]:
        returns = self._returns
        if returns is None:
            returns = self._returns = self._payoffs()
        return returns

    def _payoffs(self) -> tuple[float, float]:
        if self.player != TERMINAL:
            return (0.0, 0.0)
        if self.folded >= 0:
            won = float(self.contrib[self.folded])
            return (-won, won) if self.folded == 0 else (won, -won)
        s0, s1 = self.hand_strength(0), self.hand_strength(1)
        if s0 == s1:
            return (0.0, 0.0)
        # Both put in the same amount at a showdown; the winner takes the other's share.
        won = float(self.contrib[0])
        return (won, -won) if s0 > s1 else (-won, won)

    def info_state_key(self, player: int) -> str:
        card = card_name(self.private[player]) if len(self.private) > player else "?"
        public = card_name(self.public) if self.public >= 0 else "-"
        bets = "/".join("".join(_ACTION_CHARS[a] for a in seq) for seq in self.rounds)
        return f"p{player} {card} {public} {bets}"

    def info_state_tensor(self, player: int) -> InfoRow:
        info = self._info[player]
        if info is None:
            info = self._info[player] = InfoRow(self._info_state_tensor(player))
        return info

    def _info_state_tensor(self, player: int) -> list[float]:
        x = [0.0] * INFO_STATE_SIZE
        x[player] = 1.0
        if len(self.private) > player:
            x[_PRIVATE + self.private[player] // 2] = 1.0
        if self.public >= 0:
            x[_PUBLIC + self.public // 2] = 1.0
        for r, seq in enumerate(self.rounds):
            base = _BETTING + r * MAX_ROUND_ACTIONS * 2
            for i, a in enumerate(seq):
                # Folds end the hand, so only calls and raises are ever seen by a player to act.
                if a != FOLD:
                    x[base + 2 * i + (a - CALL)] = 1.0
        return x

    # -- Leduc specifics ------------------------------------------------------------------------
    def pot(self) -> int:
        return self.contrib[0] + self.contrib[1]

    def hand_strength(self, player: int) -> int:
        """Higher is better: pairs rank above every high card."""
        rank = self.private[player] // 2
        return 3 + rank if rank == self.public // 2 else rank

    def _deal(self, card: int) -> "LeducState":
        if not 0 <= card < NUM_CARDS or card in self.private or card == self.public:
            raise ValueError(f"apply: card {card} is not in the deck")
        if len(self.private) < 2:
            private = self.private + (card,)
            player = 0 if len(private) == 2 else CHANCE
            return LeducState(private, -1, self.rounds, 0, player, self.contrib)
        return LeducState(self.private, card, self.rounds, 1, 0, self.contrib)

    def __repr__(self) -> str:
        cards = " ".join(card_name(c) for c in self.private)
        return f"LeducState({cards} | {self.info_state_key(0)[3:]} pot={self.pot()} player={self.player})"


def _append(rounds, r, action):
    return (rounds[0] + (action,), rounds[1]) if r == 0 else (rounds[0], rounds[1] + (action,))


def _set(pair, i, value):
    return (value, pair[1]) if i == 0 else (pair[0], value)


class LeducGame:
    name = "leduc"
    num_players = 2
    num_actions = NUM_ACTIONS
    info_state_size = INFO_STATE_SIZE

    def __init__(self) -> None:
        # Shared by every hand of this game, so the positions it reaches (and their caches) are reused.
        self._root = LeducState()

    def new_initial_state(self) -> LeducState:
        return self._root
