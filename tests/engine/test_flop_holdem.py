"""Flop Hold'em rules: dealing, legal actions, the raise cap, pot arithmetic, showdowns."""
import random

import pytest

from optseq.engine.games.api import CALL, CHANCE, FOLD, RAISE, TERMINAL
from optseq.engine.games.cards import cards
from optseq.engine.games.flop_holdem import INFO_STATE_SIZE, MAX_RAISES, FlopHoldem


def deal(state, text):
    for c in cards(text):
        assert state.is_chance()
        state = state.apply(c)
    return state


def preflop(holes="As Kd 7h 2c"):
    return deal(FlopHoldem().new_initial_state(), holes)


def play(state, *actions):
    for a in actions:
        state = state.apply(a)
    return state


def test_hand_starts_with_blinds_and_four_hole_cards():
    state = FlopHoldem().new_initial_state()
    assert state.current_player() == CHANCE and state.legal_actions() == []
    outcomes = state.chance_outcomes()
    assert len(outcomes) == 52 and sum(p for _, p in outcomes) == pytest.approx(1.0)
    state = preflop()
    assert state.current_player() == 0 and state.returns() == (0.0, 0.0)
    assert state.hole_cards(0) == cards("As Kd") and state.hole_cards(1) == cards("7h 2c")
    assert state.contributions() == (50, 100) and state.pot() == 150 and state.to_call() == 50
    assert state.legal_actions() == [FOLD, CALL, RAISE]


def test_dealt_cards_leave_the_deck():
    state = deal(FlopHoldem().new_initial_state(), "As Kd")
    remaining = [c for c, _ in state.chance_outcomes()]
    assert len(remaining) == 50 and not set(cards("As Kd")) & set(remaining)
    with pytest.raises(ValueError, match="already dealt"):
        state.apply(cards("As")[0])


def test_small_blind_fold_loses_the_blind_and_ends_the_hand():
    state = play(preflop(), FOLD)
    assert state.is_terminal() and state.current_player() == TERMINAL
    assert state.returns() == (-50.0, 50.0) and state.legal_actions() == []
    with pytest.raises(ValueError, match="finished"):
        state.apply(CALL)


def test_limp_gives_big_blind_the_option_then_flop_starts_with_big_blind():
    state = play(preflop(), CALL)
    assert state.current_player() == 1 and state.to_call() == 0
    assert state.legal_actions() == [CALL, RAISE]  # no fold when checking is free
    state = play(state, CALL)
    assert state.is_chance() and state.round() == 1 and state.pot() == 200
    state = deal(state, "Qs Js 3d")
    assert state.board() == cards("Qs Js 3d")
    assert state.current_player() == 1 and state.legal_actions() == [CALL, RAISE]


def test_raise_cap_leaves_only_fold_and_call():
    state = play(preflop(), *[RAISE] * MAX_RAISES)
    assert state.raises_this_round() == MAX_RAISES
    assert state.legal_actions() == [FOLD, CALL]
    with pytest.raises(ValueError, match="not legal"):
        state.apply(RAISE)
    state = play(state, CALL)
    assert state.is_chance() and state.contributions() == (400, 400)
    state = deal(state, "Qs Js 3d")
    state = play(state, *[RAISE] * MAX_RAISES)
    assert state.legal_actions() == [FOLD, CALL]


def test_pot_arithmetic_through_both_rounds():
    state = play(preflop(), RAISE)            # SB raises to 200
    assert state.contributions() == (200, 100) and state.to_call() == 100
    state = play(state, RAISE)                # BB re-raises to 300
    assert state.contributions() == (200, 300)
    state = play(state, CALL)                 # SB calls: 300 each
    assert state.contributions() == (300, 300) and state.is_chance()
    state = deal(state, "Ah 9c 4d")
    state = play(state, RAISE)                # BB bets 200
    assert state.contributions() == (300, 500)
    state = play(state, RAISE)                # SB raises 200 more
    assert state.contributions() == (700, 500) and state.pot() == 1200
    state = play(state, CALL)
    assert state.is_terminal() and state.pot() == 1400
    assert state.returns() == (700.0, -700.0)  # aces beat seven high


def test_fold_on_the_flop_loses_what_was_put_in():
    state = deal(play(preflop(), CALL, CALL), "Ah 9c 4d")
    state = play(state, RAISE, FOLD)
    assert state.returns() == (-100.0, 100.0)


def showdown(holes, board, *actions):
    state = deal(play(deal(FlopHoldem().new_initial_state(), holes), CALL, CALL), board)
    state = play(state, *(actions or (CALL, CALL)))
    assert state.is_terminal()
    return state.returns()


def test_showdown_better_hand_wins_and_equal_hands_split():
    assert showdown("2h 3d 7c 7d", "4s 5c 9h") == (-100.0, 100.0)  # sevens beat 9-high
    assert showdown("6s 6d Ah Kc", "2c 3d 4h") == (100.0, -100.0)  # sixes beat ace-high
    assert showdown("Ah Kh Ac Qc", "Ad 7s 2c") == (100.0, -100.0)  # same pair, king kicker
    assert showdown("As Kd Ah Kc", "2c 7d 9h", CALL, RAISE, CALL) == (0.0, 0.0)  # same ranks split
    assert showdown("2s 3s 2d 3d", "Ah Kh Qh") == (0.0, 0.0)  # both play the board: split


def test_wheel_straight_wins_at_showdown():
    assert showdown("Ah 5c Ks Kd", "2c 3d 4h") == (100.0, -100.0)
    assert showdown("Ah 5c 5s 6s", "2c 3d 4h") == (-100.0, 100.0)  # six-high straight beats it


def test_random_playouts_are_zero_sum_and_bounded():
    rng = random.Random(7)
    game = FlopHoldem()
    for _ in range(300):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance():
                state = state.apply(rng.choice(state.chance_outcomes())[0])
            else:
                state = state.apply(rng.choice(state.legal_actions()))
        r0, r1 = state.returns()
        assert r0 + r1 == 0.0
        assert abs(r0) in (0.0, *state.contributions())


def test_info_state_hides_the_opponent_cards():
    a = play(preflop("As Kd 7h 2c"), RAISE)
    b = play(preflop("As Kd 8h 8c"), RAISE)
    assert len(a.info_state_tensor(0)) == INFO_STATE_SIZE == FlopHoldem.info_state_size
    assert a.info_state_tensor(0) == b.info_state_tensor(0)
    assert a.info_state_key(0) == b.info_state_key(0)
    assert a.info_state_tensor(1) != b.info_state_tensor(1)
    assert a.info_state_key(0) != a.info_state_key(1)
    t = a.info_state_tensor(0)
    assert sum(t) == 1 + 2 + 1  # seat, two hole cards, one action


def test_info_state_distinguishes_histories():
    check_bet = deal(play(preflop(), CALL, CALL), "Ah 9c 4d")
    assert play(check_bet, CALL).info_state_tensor(0) != play(check_bet, RAISE).info_state_tensor(0)
    assert play(preflop(), CALL, CALL).info_state_key(0) != play(preflop(), RAISE, CALL).info_state_key(0)
