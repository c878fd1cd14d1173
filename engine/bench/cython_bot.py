"""Cython bot lever: opponent_act calls/s, pure-Python twin (baseline) vs Cython twin (candidate).

Both arms answer the same seeded decision states, taken from randomly played Flop Hold'em
hands, at equal rollouts; the quality guards require identical actions and equities.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

from optseq.engine import kit
from optseq.engine.bots import backend
from optseq.engine.bots.equity import DEFAULT_ROLLOUTS
from optseq.engine.games.api import RAISE
from optseq.engine.games.flop_holdem import FlopHoldem


@dataclass(frozen=True)
class Size:
    states: int
    """Decision states each timed pass answers."""
    rollouts: int
    """Monte Carlo rollouts per opponent_act call, the same in both arms."""
    repeats: int
    warmup: int
    min_seconds: float
    """Each sample repeats its pass over the states until this much time has passed."""


SIZES = {
    "ci": Size(states=120, rollouts=DEFAULT_ROLLOUTS, repeats=5, warmup=1, min_seconds=0.2),
    "gpu": Size(states=1000, rollouts=DEFAULT_ROLLOUTS, repeats=15, warmup=2, min_seconds=1.0),
}
SEED = 20240501


def decision_states(n: int, seed: int) -> list[tuple]:
    """`n` opponent_act argument tuples (without rollouts) met in uniformly random play."""
    rng = random.Random(seed)
    game = FlopHoldem()
    states = []
    game_id = 0
    while len(states) < n:
        state = game.new_initial_state()
        decisions = 0
        while not state.is_terminal() and len(states) < n:
            if state.is_chance():
                state = state.apply(rng.choice(state.chance_outcomes())[0])
                continue
            player = state.current_player()
            legal = state.legal_actions()
            states.append((state.hole_cards(player), state.board(), state.pot(), state.to_call(),
                           RAISE in legal, game_id, decisions))
            decisions += 1
            state = state.apply(rng.choice(legal))
        game_id += 1
    return states


def calls_per_second(act, states: list[tuple], rollouts: int, min_seconds: float) -> float:
    calls = 0
    start = time.perf_counter()
    while True:
        for args in states:
            act(*args, rollouts)
        calls += len(states)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return calls / elapsed


def run(args, infra: kit.Infra) -> None:
    """The baseline is always the Python twin: the bot is the only thing this lever changes,
    and no other lever touches opponent_act, so `infra` does not alter either arm."""
    reason = backend.native_status()
    if reason is not None:
        raise kit.Unavailable(reason)
    size = SIZES[args.size]
    repeats = size.repeats if args.repeats is None else args.repeats
    warmup = size.warmup if args.warmup is None else args.warmup
    if repeats < 1 or warmup < 0:
        raise SystemExit(f"cython_bot: --repeats must be >= 1 and --warmup >= 0, got {repeats} and {warmup}")

    states = decision_states(size.states, SEED)
    python_act, cython_act = backend.twin("python"), backend.twin("cython")
    print(f"cython_bot: {len(states)} decision states, {size.rollouts} rollouts per call", flush=True)

    expected = [python_act(*s, size.rollouts) for s in states]
    got = [cython_act(*s, size.rollouts) for s in states]
    kit.quality("action_mismatches", sum(a[0] != b[0] for a, b in zip(expected, got)), 0)
    kit.quality("equity_max_abs_diff", max(abs(a[1] - b[1]) for a, b in zip(expected, got)), 0)

    kit.pairs(
        lambda: calls_per_second(python_act, states, size.rollouts, size.min_seconds),
        lambda: calls_per_second(cython_act, states, size.rollouts, size.min_seconds),
        repeats=repeats, warmup=warmup, metric="opponent_act_calls_per_s", unit="calls/s",
        higher_is_better=True, label="cython_bot")
