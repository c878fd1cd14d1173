"""Leduc Hold'em rules, pot arithmetic and the size of its game tree."""
import pytest

from optseq.engine.games.api import CALL, CHANCE, FOLD, RAISE, TERMINAL
from optseq.engine.games.leduc import INFO_STATE_SIZE, LeducGame

J1, J2, Q1, Q2, K1, K2 = range(6)


def deal(*cards):
    state = LeducGame().new_initial_state()
    for c in cards:
        state = state.apply(c)
    return state


def play(state, *actions):
    for a in actions:
        state = state.apply(a)
    return state


def test_deal_is_uniform_without_replacement():
    root = LeducGame().new_initial_state()
    assert root.current_player() == CHANCE and root.legal_actions() == []
    assert root.chance_outcomes() == [(c, 1 / 6) for c in range(6)]
    one = root.apply(Q1)
    assert [c for c, _ in one.chance_outcomes()] == [J1, J2, Q2, K1, K2]
    assert all(p == pytest.approx(1 / 5) for _, p in one.chance_outcomes())
    two = one.apply(K2)
    assert two.current_player() == 0 and two.chance_outcomes() == []


def test_fold_only_under_pressure_and_at_most_two_raises():
    s = deal(J1, Q1)
    assert s.legal_actions() == [CALL, RAISE]
    assert play(s, CALL).legal_actions() == [CALL, RAISE]
    assert play(s, RAISE).legal_actions() == [FOLD, CALL, RAISE]
    assert play(s, RAISE, RAISE).legal_actions() == [FOLD, CALL]
    assert play(s, CALL, RAISE, RAISE).legal_actions() == [FOLD, CALL]


def test_pot_arithmetic_through_both_rounds():
    s = deal(J1, Q1)
    assert s.pot() == 2
    s = play(s, RAISE)            # p0 raises 2: 3 v 1
    assert s.contrib == (3, 1)
    s = play(s, RAISE)            # p1 calls 2 and raises 2: 3 v 5
    assert s.contrib == (3, 5)
    s = play(s, CALL)             # p0 calls: round over
    assert s.contrib == (5, 5) and s.current_player() == CHANCE
    assert [c for c, _ in s.chance_outcomes()] == [J2, Q2, K1, K2]
    s = s.apply(K1)
    assert s.current_player() == 0  # player 0 opens round two as well
    s = play(s, CALL, RAISE)      # round-two bets are 4
    assert s.contrib == (5, 9)
    s = play(s, RAISE)
    assert s.contrib == (13, 9) and s.legal_actions() == [FOLD, CALL]
    s = play(s, CALL)
    assert s.is_terminal() and s.pot() == 26
    assert s.returns() == (-13.0, 13.0)  # Q beats J, no pair


def test_fold_loses_what_was_put_in():
    s = play(deal(K1, J1), RAISE, FOLD)
    assert s.is_terminal() and s.current_player() == TERMINAL
    assert s.returns() == (1.0, -1.0)
    s = play(deal(K1, J1), CALL, RAISE, RAISE, FOLD)   # player 1 raised to 3, then folds to 5
    assert s.returns() == (3.0, -3.0)
    s = play(deal(K1, J1), CALL, RAISE, FOLD)
    assert s.returns() == (-1.0, 1.0)


@pytest.mark.parametrize("cards, expected", [
    ((J1, K1, J2), (1.0, -1.0)),   # pair of jacks beats a king
    ((Q1, K1, J1), (-1.0, 1.0)),   # no pair: king high wins
    ((Q1, Q2, K1), (0.0, 0.0)),    # same rank splits
    ((K1, Q1, Q2), (-1.0, 1.0)),   # pair of queens beats a king
])
def test_showdown(cards, expected):
    p0, p1, public = cards
    s = play(deal(p0, p1), CALL, CALL).apply(public)
    s = play(s, CALL, CALL)
    assert s.is_terminal() and s.returns() == expected


def test_illegal_moves_are_refused():
    s = deal(J1, Q1)
    with pytest.raises(ValueError, match="not legal"):
        s.apply(FOLD)
    with pytest.raises(ValueError, match="not legal"):
        play(s, RAISE, RAISE).apply(RAISE)
    with pytest.raises(ValueError, match="not in the deck"):
        LeducGame().new_initial_state().apply(J1).apply(J1)
    with pytest.raises(ValueError, match="over"):
        play(s, RAISE, FOLD).apply(CALL)


def test_information_state_hides_the_opponent_card():
    a = play(deal(Q1, J1), RAISE, CALL).apply(K1)
    b = play(deal(Q2, K2), RAISE, CALL).apply(K1)
    # Player 0 holds a queen in both; the suit differs, so the keys differ but the tensors (ranks) agree.
    assert a.info_state_key(0) != b.info_state_key(0)
    assert a.info_state_tensor(0) == b.info_state_tensor(0)
    c = play(deal(Q1, K2), RAISE, CALL).apply(K1)
    assert a.info_state_key(0) == c.info_state_key(0)
    assert a.info_state_tensor(0) == c.info_state_tensor(0)
    assert a.info_state_tensor(1) != c.info_state_tensor(1)


def walk(state, seen, counts):
    counts["nodes"] += 1
    if state.is_terminal():
        assert sum(state.returns()) == 0.0
        return
    if state.is_chance():
        assert sum(p for _, p in state.chance_outcomes()) == pytest.approx(1.0)
        for card, _ in state.chance_outcomes():
            walk(state.apply(card), seen, counts)
        return
    player = state.current_player()
    tensor = state.info_state_tensor(player)
    assert len(tensor) == INFO_STATE_SIZE and tensor[player] == 1.0
    seen.setdefault(state.info_state_key(player), tuple(tensor))
    for a in state.legal_actions():
        walk(state.apply(a), seen, counts)


def test_game_tree_matches_published_sizes():
    # OpenSpiel's leduc_poker (cards distinguished by suit, as in our keys): 936 information sets,
    # 9457 histories counting chance and terminal nodes.
    seen, counts = {}, {"nodes": 0}
    walk(LeducGame().new_initial_state(), seen, counts)
    assert counts["nodes"] == 9457
    assert len(seen) == 936
    # The tensor drops suits (strategically irrelevant without flushes): 288 rank-level information sets.
    assert len(set(seen.values())) == 288


def test_positions_are_shared_and_their_answers_cannot_be_corrupted():
    game = LeducGame()
    s = play(game.new_initial_state().apply(Q1).apply(K2), RAISE)
    # A second hand from the game's root meets the very same positions (what traversal reuse relies on).
    assert play(game.new_initial_state().apply(Q1).apply(K2), RAISE) is s
    legal, outcomes = s.legal_actions(), play(s, CALL).chance_outcomes()
    legal.append(99)
    outcomes.clear()
    assert s.legal_actions() == [FOLD, CALL, RAISE]
    assert [c for c, _ in play(s, CALL).chance_outcomes()] == [J1, J2, Q2, K1]
    # A fresh position computes what a remembered one answers.
    fresh = play(deal(Q1, K2), RAISE)
    assert fresh is not s and fresh.info_state_tensor(1) == s.info_state_tensor(1) == s.info_state_tensor(1)
    assert isinstance(s.info_state_tensor(0), tuple)
    with pytest.raises(ValueError, match="not legal"):
        play(s, RAISE, RAISE).apply(RAISE)
    with pytest.raises(ValueError, match="not legal"):
        play(s, RAISE, RAISE).apply(RAISE)
