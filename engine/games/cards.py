"""Cards as ints 0..51 (rank * 4 + suit) and a readable 5-card hand evaluator."""
from __future__ import annotations

import operator
from collections import Counter
from typing import Iterable, Sequence

RANKS = "23456789TJQKA"
SUITS = "cdhs"
NUM_CARDS = 52
DECK = tuple(range(NUM_CARDS))

(HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS,
 STRAIGHT_FLUSH) = range(9)
CATEGORY_NAMES = ("high card", "pair", "two pair", "three of a kind", "straight", "flush",
                  "full house", "four of a kind", "straight flush")

# A hand value is the category above up to five 4-bit ranks, most significant first, so
# plain integer comparison orders hands. native/_handeval.pyx packs values the same way.
CATEGORY_SHIFT = 20
WHEEL = [12, 3, 2, 1, 0]

# Rank multiplicities, largest first -> category of a hand that is neither straight nor flush.
_SHAPES = {
    (1, 1, 1, 1, 1): HIGH_CARD,
    (2, 1, 1, 1): PAIR,
    (2, 2, 1): TWO_PAIR,
    (3, 1, 1): TRIPS,
    (3, 2): FULL_HOUSE,
    (4, 1): QUADS,
}


def rank_of(card: int) -> int:
    return card >> 2


def suit_of(card: int) -> int:
    return card & 3


def card(text: str) -> int:
    """'As' -> 51, 'Td' -> 33."""
    if len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(f"card {text!r}: expected rank {RANKS} then suit {SUITS}, e.g. 'As'")
    return RANKS.index(text[0]) * 4 + SUITS.index(text[1])


def cards(text: str) -> tuple[int, ...]:
    """'As Kd 7h' -> a tuple of card ints."""
    return tuple(card(t) for t in text.split())


def card_str(c: int) -> str:
    check_card(c, "card")
    return RANKS[rank_of(c)] + SUITS[suit_of(c)]


def cards_str(cs: Iterable[int]) -> str:
    return " ".join(card_str(c) for c in cs)


def check_card(c: object, where: str) -> int:
    """`c` as a plain int, or ValueError naming `where` when it is not a card."""
    try:
        value = operator.index(c) if not isinstance(c, bool) else -1
    except TypeError:
        value = -1
    if not 0 <= value < NUM_CARDS:
        raise ValueError(f"{where}: {c!r} is not a card (an int in 0..51)")
    return value


def evaluate5(hand: Sequence[int]) -> int:
    """Value of five distinct cards: higher beats lower, equal values split the pot.

    Unchecked: `evaluate` validates first. Straights are ranked by their top card, and in
    the wheel (A-2-3-4-5) the ace plays low, so its top card is the five.
    """
    ranks = sorted((c >> 2 for c in hand), reverse=True)
    flush = len({c & 3 for c in hand}) == 1
    distinct = sorted(set(ranks), reverse=True)
    straight_top = None
    if len(distinct) == 5:
        if distinct[0] - distinct[4] == 4:
            straight_top = distinct[0]
        elif distinct == WHEEL:
            straight_top = 3
    if straight_top is not None:
        return _pack(STRAIGHT_FLUSH if flush else STRAIGHT, [straight_top])
    if flush:
        return _pack(FLUSH, distinct)
    counts = Counter(ranks)
    # Bigger groups first, then higher ranks: quads before kicker, high pair before low pair.
    ordered = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    shape = tuple(sorted(counts.values(), reverse=True))
    return _pack(_SHAPES[shape], ordered)


def evaluate(hand: Sequence[int]) -> int:
    """evaluate5 after checking that `hand` is five distinct cards."""
    hand = [check_card(c, "evaluate") for c in hand]
    if len(hand) != 5 or len(set(hand)) != 5:
        raise ValueError(f"evaluate: need 5 distinct cards, got {hand!r}")
    return evaluate5(hand)


def category(value: int) -> int:
    return value >> CATEGORY_SHIFT


def describe(value: int) -> str:
    return CATEGORY_NAMES[category(value)]


def _pack(category_: int, ranks: Sequence[int]) -> int:
    value = category_ << CATEGORY_SHIFT
    shift = CATEGORY_SHIFT - 4
    for r in ranks:
        value |= r << shift
        shift -= 4
    return value
