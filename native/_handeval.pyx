"""Five-card hand evaluator in C, packing values exactly as engine.games.cards.evaluate5."""

import operator

from libc.string cimport memset

# Categories and packing mirror engine/games/cards.py: category << 20, then up to five
# 4-bit ranks, most significant first.
cdef enum:
    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    TRIPS = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    QUADS = 7
    STRAIGHT_FLUSH = 8
    CATEGORY_SHIFT = 20
    WHEEL_BITS = 0x100F  # A, 5, 4, 3, 2


cdef int evaluate5(const int* hand) noexcept nogil:
    cdef int counts[13]
    cdef int singles[5]
    cdef int pairs[2]
    cdef int n_singles = 0, n_pairs = 0, trips = -1, quads = -1
    cdef int bits = 0, distinct = 0, r, i, low, high, value
    cdef bint flush = ((hand[0] ^ hand[1]) | (hand[0] ^ hand[2]) | (hand[0] ^ hand[3])
                       | (hand[0] ^ hand[4])) & 3 == 0
    memset(counts, 0, sizeof(counts))
    for i in range(5):
        r = hand[i] >> 2
        if counts[r] == 0:
            distinct += 1
            bits |= 1 << r
        counts[r] += 1

    if distinct == 5:
        high = 12
        while not (bits >> high) & 1:
            high -= 1
        low = 0
        while not (bits >> low) & 1:
            low += 1
        if high - low == 4 or bits == WHEEL_BITS:
            if bits == WHEEL_BITS:
                high = 3  # the ace plays low
            return ((STRAIGHT_FLUSH if flush else STRAIGHT) << CATEGORY_SHIFT) | (high << 16)
        value = (FLUSH if flush else HIGH_CARD) << CATEGORY_SHIFT
        i = 16
        r = 12
        while r >= 0:
            if (bits >> r) & 1:
                value |= r << i
                i -= 4
            r -= 1
        return value

    # Not five distinct ranks, so neither straight nor flush: group ranks by multiplicity,
    # each group from high rank to low.
    r = 12
    while r >= 0:
        if counts[r] == 1:
            singles[n_singles] = r
            n_singles += 1
        elif counts[r] == 2:
            pairs[n_pairs] = r
            n_pairs += 1
        elif counts[r] == 3:
            trips = r
        elif counts[r] == 4:
            quads = r
        r -= 1

    if quads >= 0:
        return (QUADS << CATEGORY_SHIFT) | (quads << 16) | (singles[0] << 12)
    if trips >= 0:
        if n_pairs == 1:
            return (FULL_HOUSE << CATEGORY_SHIFT) | (trips << 16) | (pairs[0] << 12)
        return (TRIPS << CATEGORY_SHIFT) | (trips << 16) | (singles[0] << 12) | (singles[1] << 8)
    if n_pairs == 2:
        return (TWO_PAIR << CATEGORY_SHIFT) | (pairs[0] << 16) | (pairs[1] << 12) | (singles[0] << 8)
    return ((PAIR << CATEGORY_SHIFT) | (pairs[0] << 16) | (singles[0] << 12) | (singles[1] << 8)
            | (singles[2] << 4))


def evaluate(hand) -> int:
    """Value of five distinct cards (ints 0..51); the checked Python entry to evaluate5."""
    cdef int h[5]
    cdef int i
    cards = [operator.index(c) for c in hand]
    if len(cards) != 5 or len(set(cards)) != 5 or not all(0 <= c < 52 for c in cards):
        raise ValueError(f"evaluate: need 5 distinct cards in 0..51, got {list(hand)!r}")
    for i in range(5):
        h[i] = cards[i]
    return evaluate5(h)


def category_counts() -> list:
    """How many of the 2,598,960 five-card hands fall in each category, and how many
    distinct values there are: a whole-deck check of the evaluator against known totals."""
    cdef int h[5]
    cdef int a, b, c, d, e, value
    cdef long counts[9]
    cdef char* seen
    cdef long n_distinct = 0
    seen_buf = bytearray(9 << CATEGORY_SHIFT)
    seen = seen_buf
    memset(counts, 0, sizeof(counts))
    with nogil:
        for a in range(52):
            h[0] = a
            for b in range(a + 1, 52):
                h[1] = b
                for c in range(b + 1, 52):
                    h[2] = c
                    for d in range(c + 1, 52):
                        h[3] = d
                        for e in range(d + 1, 52):
                            h[4] = e
                            value = evaluate5(h)
                            counts[value >> CATEGORY_SHIFT] += 1
                            if not seen[value]:
                                seen[value] = 1
                                n_distinct += 1
    return [[counts[k] for k in range(9)], n_distinct]
