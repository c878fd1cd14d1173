"""Head-to-head against EquityBot: random play loses, the bot against itself breaks even."""
import pytest

from optseq.engine.eval.head_to_head import equity_bot_policy, head_to_head, uniform_policy
from optseq.engine.games.api import FOLD
from optseq.engine.games.flop_holdem import FlopHoldem

ROLLOUTS = 32


def test_uniform_random_loses_to_equity_bot():
    result = head_to_head(uniform_policy, hands=1000, seed=0, rollouts=ROLLOUTS)
    assert result.hands == 1000
    assert result.ci_low < result.mbb_per_hand < result.ci_high < 0


def test_equity_bot_against_itself_breaks_even():
    result = head_to_head(equity_bot_policy(ROLLOUTS), hands=1000, seed=0, rollouts=ROLLOUTS)
    assert result.ci_low < 0 < result.ci_high
    assert result.ci_high - result.ci_low < 400  # duplicate deals keep the interval tight


def test_always_folding_loses_the_blinds():
    # Folding every time it faces a bet: it loses the small blind as SB, and as BB it
    # checks when it may (fold is not legal then) and folds to any bet.
    def folder(state):
        return [1.0, 0.0, 0.0] if FOLD in state.legal_actions() else [0.0, 1.0, 0.0]

    result = head_to_head(folder, hands=200, seed=1, rollouts=ROLLOUTS)
    assert -1000.0 <= result.mbb_per_hand <= -250.0


def test_results_are_reproducible_and_seed_dependent():
    a = head_to_head(uniform_policy, hands=100, seed=5, rollouts=ROLLOUTS)
    assert head_to_head(uniform_policy, hands=100, seed=5, rollouts=ROLLOUTS) == a
    assert head_to_head(uniform_policy, hands=100, seed=6, rollouts=ROLLOUTS) != a


def test_uniform_policy_spreads_over_legal_actions():
    state = FlopHoldem().new_initial_state()
    for c in (0, 1, 2, 3):
        state = state.apply(c)
    assert uniform_policy(state) == pytest.approx([1 / 3] * 3)
    assert uniform_policy(state.apply(1)) == pytest.approx([0.0, 0.5, 0.5])


@pytest.mark.parametrize("hands", [0, 3, 7, 2.0])
def test_hand_count_must_be_even_pairs(hands):
    with pytest.raises(ValueError, match="hands"):
        head_to_head(uniform_policy, hands=hands)


def test_policy_without_weight_on_legal_actions_is_named():
    with pytest.raises(ValueError, match="policy"):
        head_to_head(lambda state: [0.0, 0.0, 0.0], hands=4)
