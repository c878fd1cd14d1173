"""The group-sequential sign test, checked against brute-force enumeration of every sign sequence."""
from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import stats as sps

from optseq.state.runs.sequential import ALPHA, bounds, design, first_decidable, spent


def enumerate_walks(looks, needed):
    """Exact null probabilities by listing all 2^n sequences of above/below: P(first crossing at each look)."""
    n = looks[-1]
    crossed = [0.0] * len(looks)
    for signs in itertools.product((0, 1), repeat=n):
        for k, (look, c) in enumerate(zip(looks, needed)):
            if sum(signs[:look]) >= c:
                crossed[k] += 0.5 ** n
                break
    return crossed


@pytest.mark.parametrize("looks, budget", [((3, 6, 8), 8), ((5, 10), 10), ((6, 12), 18), ((4, 7, 9, 12), 12),
                                            ((12,), 12), ((7, 14), 21)])
def test_crossing_probabilities_match_enumeration_and_fit_the_spending(looks, budget):
    d = design(looks, budget)
    assert d.crossed == pytest.approx(enumerate_walks(looks, d.needed), abs=1e-12)
    for k, look in enumerate(looks):
        assert sum(d.crossed[:k + 1]) <= spent(look / budget) + 1e-12
        if d.needed[k] <= look:  # one fewer needed would overspend: the boundary is the tightest that fits
            looser = list(d.needed[:k]) + [d.needed[k] - 1]
            assert sum(enumerate_walks(looks[:k + 1], looser)) > spent(look / budget)
    assert sum(d.crossed) <= ALPHA


def test_one_look_is_the_classic_sign_test():
    for n in (5, 6, 10, 20, 30):
        c = design((n,), n).needed[0]
        assert sps.binom.sf(c - 1, n, 0.5) <= ALPHA < sps.binom.sf(c - 2, n, 0.5)


def test_the_spending_is_front_loaded_but_bounded():
    assert spent(0) == 0 and spent(1) == pytest.approx(ALPHA) and spent(2) == pytest.approx(ALPHA)
    assert 0.4 * ALPHA < spent(1 / 3) < 0.5 * ALPHA  # a first look at a third of the budget may spend ~45%


def test_bounds_are_the_sign_tests_decision():
    rng = random.Random(7)
    d = design((6, 12), 18)
    for _ in range(200):
        ratios = [math.exp(rng.gauss(0.05, 0.1)) for _ in range(12)]
        threshold = math.exp(rng.gauss(0.05, 0.1))
        low, high = bounds(ratios, d)
        c = d.needed[-1]
        assert (low > threshold) == (sum(r > threshold for r in ratios) >= c)
        assert (high < threshold) == (sum(r < threshold for r in ratios) >= c)


def test_no_bounds_while_no_count_can_decide():
    assert bounds([1.5, 1.6, 1.4], design((3,), 15)) == (None, None)
    assert first_decidable(5) == 5 and first_decidable(15) == 6 and first_decidable(100) == 8


def test_the_p_value_is_exact_in_the_stagewise_order():
    looks, budget = (4, 7, 9), 12
    d = design(looks, budget)
    for above in range(10):
        p = 0.0
        for signs in itertools.product((0, 1), repeat=9):
            counts = [sum(signs[:n]) for n in looks]
            first = next((k for k, (s, c) in enumerate(zip(counts, d.needed)) if s >= c), None)
            if (first is not None and first < 2) or (first in (None, 2) and counts[2] >= above):
                p += 0.5 ** 9
        assert d.p_value(above) == pytest.approx(p, abs=1e-12)


def test_looks_must_increase():
    with pytest.raises(ValueError, match="increasing"):
        design((6, 6), 12)
