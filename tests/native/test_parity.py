"""Cython twins against their Python references: evaluator, PRNG, and EquityBot state by state."""
import random

import pytest

from optseq.engine.bench.cython_bot import decision_states
from optseq.engine.bots import equity as E
from optseq.engine.games import cards as C

_handeval = pytest.importorskip("optseq.native._handeval", reason="native extension not built")
_equity = pytest.importorskip("optseq.native._equity", reason="native extension not built")


def test_whole_deck_category_totals():
    counts, distinct = _handeval.category_counts()
    # Known totals over all C(52, 5) hands, high card first; 7462 distinct hand values.
    assert counts == [1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40]
    assert distinct == 7462


def test_evaluator_values_match_python():
    rng = random.Random(3)
    hands = [rng.sample(C.DECK, 5) for _ in range(20000)]
    hands += [list(C.cards(h)) for h in ("Ah 2d 3s 4c 5d", "Ah 2h 3h 4h 5h", "Ts Js Qs Ks As",
                                          "8h 8d 8s Kc Kd", "9h 9d 9s 9c 2d", "Jh Jd 4s 4c Ad")]
    assert [_handeval.evaluate(h) for h in hands] == [C.evaluate5(h) for h in hands]


def test_evaluator_rejects_bad_hands():
    with pytest.raises(ValueError, match="5 distinct cards"):
        _handeval.evaluate([0, 1, 2, 3, 3])


def test_prng_draws_match_python():
    for seed in (0, 1234567, E.seed_for(41, 7), (1 << 64) - 1):
        rng = E.SplitMix64(seed)
        assert _equity.splitmix64(seed, 50) == [rng.next() for _ in range(50)]


def test_ten_thousand_states_identical_actions_and_equities():
    states = decision_states(10000, seed=11)
    rollouts = 6
    python = [E.opponent_act(*s, rollouts) for s in states]
    cython = [_equity.opponent_act(*s, rollouts, E.RAISE_EQUITY) for s in states]
    mismatches = [(s, p, c) for s, p, c in zip(states, python, cython) if p != c]
    assert not mismatches, f"{len(mismatches)} states differ, first: {mismatches[0]}"
    assert len({a for a, _ in python}) == 3  # the states exercise fold, call and raise
    assert len({len(s[1]) for s in states}) == 2  # preflop and flop boards
