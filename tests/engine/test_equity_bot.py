"""EquityBot: the PRNG, Monte Carlo equity, the pot-odds rule, input checks and the twin switch."""
import json
import os
import subprocess
import sys

import pytest

from optseq.engine.bots import backend
from optseq.engine.bots import equity as E
from optseq.engine.games.api import CALL, FOLD, RAISE
from optseq.engine.games.cards import cards

TWINS = ["python", pytest.param("cython", marks=pytest.mark.skipif(
    backend.native_status() is not None, reason=f"Cython twin: {backend.native_status()}"))]


def test_splitmix64_matches_the_reference_sequence():
    # First outputs for seed 1234567 from Vigna's splitmix64.c.
    rng = E.SplitMix64(1234567)
    assert [rng.next() for _ in range(5)] == [
        6457827717110365317, 3203168211198807973, 9817491932198370423,
        4593380528125082431, 16408922859458223821]


def test_bounded_draws_cover_the_range():
    rng = E.SplitMix64(99)
    draws = [rng.below(7) for _ in range(7000)]
    assert set(draws) == set(range(7))
    assert all(800 < draws.count(k) < 1200 for k in range(7))


@pytest.mark.parametrize("kind", TWINS)
def test_equity_depends_only_on_game_and_decision(kind):
    act = backend.twin(kind)
    hole, board = cards("Th 9h"), cards("8h 2c Kd")
    first = [act(hole, board, 300, 100, True, g, d, 64) for g, d in [(1, 0), (1, 1), (2, 0)]]
    again = [act(hole, board, 300, 100, True, g, d, 64) for g, d in [(2, 0), (1, 1), (1, 0)]][::-1]
    assert first == again
    assert len({e for _, e in first}) > 1  # other seeds, other draws


@pytest.mark.parametrize("kind", TWINS)
def test_the_nuts_have_full_equity_and_raise(kind):
    act = backend.twin(kind)
    assert act(cards("As Ks"), cards("Qs Js Ts"), 300, 100, True, 5, 0, 200) == (RAISE, 1.0)
    assert act(cards("As Ks"), cards("Qs Js Ts"), 300, 100, False, 5, 0, 200) == (CALL, 1.0)


@pytest.mark.parametrize("kind", TWINS)
def test_preflop_equities_are_sensible(kind):
    act = backend.twin(kind)
    _, aces = act(cards("Ah Ad"), (), 150, 50, True, 3, 0, 4000)
    _, trash = act(cards("7c 2d"), (), 150, 50, True, 3, 0, 4000)
    # Against one random hand with a three-card board, aces win about 93%; 7-2 offsuit about 33%.
    assert 0.90 < aces < 0.96
    assert 0.28 < trash < 0.38


def test_pot_odds_rule():
    assert E.decide(0.0, 100, 0, True) == CALL         # never fold a free check
    assert E.decide(0.2, 100, 100, True) == FOLD       # needs 0.5 to call
    assert E.decide(0.5, 100, 100, True) == CALL       # exactly the pot odds: call
    assert E.decide(0.45, 300, 100, False) == CALL     # needs 0.25
    assert E.decide(E.RAISE_EQUITY, 100, 100, True) == RAISE
    assert E.decide(0.99, 100, 100, False) == CALL     # capped: call


@pytest.mark.parametrize("args, named", [
    ((cards("As"), (), 100, 0, True, 0, 0, 10), "hole needs 2"),
    ((cards("As As"), (), 100, 0, True, 0, 0, 10), "repeat"),
    ((cards("As Kd"), cards("As 2c 3c"), 100, 0, True, 0, 0, 10), "repeat"),
    ((cards("As Kd"), cards("2c 3c 4c 5c"), 100, 0, True, 0, 0, 10), "board holds at most 3"),
    (((51, 52), (), 100, 0, True, 0, 0, 10), "hole"),
    ((cards("As Kd"), ("2c",), 100, 0, True, 0, 0, 10), "board"),
    ((cards("As Kd"), (), -1, 0, True, 0, 0, 10), "pot"),
    ((cards("As Kd"), (), 100, 1.5, True, 0, 0, 10), "to_call"),
    ((cards("As Kd"), (), 100, 0, True, -3, 0, 10), "game_id"),
    ((cards("As Kd"), (), 100, 0, True, 0, 1 << 64, 10), "decision_index"),
    ((cards("As Kd"), (), 100, 0, True, 0, 0, 0), "rollouts"),
])
def test_bad_inputs_are_named(args, named):
    for kind in ("python", "cython"):
        with pytest.raises(ValueError, match=named):
            backend.twin(kind)(*args)


def run_python(code, **env):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


CHECK = """
import json, sys
from optseq.engine.bots import backend, equity
args = ((51, 46), (9, 20, 33), 400, 200, True, 11, 2, 50)
print(json.dumps([backend.name(), backend.native_status(), backend.opponent_act(*args),
                  equity.opponent_act(*args)]))
"""


def test_purepython_switch_forces_the_python_twin():
    name, status, got, expected = run_python(CHECK, OPTSEQ_PUREPYTHON="1")
    assert name == "python" and "OPTSEQ_PUREPYTHON" in status
    assert got == expected


def test_missing_extension_falls_back_to_python():
    # A None entry in sys.modules makes `from native import _equity` raise ImportError,
    # exactly as when the extension was never compiled.
    name, status, got, expected = run_python("import sys; sys.modules['optseq.native._equity'] = None\n" + CHECK,
                                             OPTSEQ_PUREPYTHON="")
    assert name == "python" and status == "native extension not compiled"
    assert got == expected


@pytest.mark.skipif(backend.native_status() is not None, reason=f"{backend.native_status()}")
def test_compiled_extension_is_the_default():
    name, status, got, expected = run_python(CHECK, OPTSEQ_PUREPYTHON="")
    assert name == "cython" and status is None and got == expected
