"""Best of N configs (Hsu's MCB over blocks): critical values, the three outcomes, guards, the 95% guarantee."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from optseq.state.plan.model import Guard, Rule
from optseq.state.runs.best_of import best_of, more_blocks
from optseq.state.runs.mcb import critical_value
from optseq.state.runs.stats import StatsError

METRIC, COST = "exploitability", "s_per_iter"
RULE = Rule(metric=METRIC, choose=f"min:{METRIC}", cost_metric=COST, max_cost_ratio=8.0, margin=0.05,
            repeats=3, max_repeats=12)


def blocked(log_means: dict[str, float], blocks: int, sd: float, seed: int, *, costs: dict[str, float] | None = None,
            block_sd: float = 0.5, passes: int = 1) -> list[dict]:
    """Samples as model_size emits them: per block and config, three s_per_iter values and one exploitability.

    exploitability = exp(log mean + block effect + noise): a block effect (machine drift, the block's deal)
    shared by every config of the block, which the comparison must remove.
    """
    rng = np.random.default_rng(seed)
    costs = costs or {arm: 1.0 for arm in log_means}
    out = []
    for run in range(1, passes + 1):
        for pair in range(blocks):
            shift = rng.normal(0.0, block_sd)
            for arm, mu in log_means.items():
                for _ in range(3):
                    out.append({"arm": arm, "metric": COST, "value": costs[arm] * (1 + 0.02 * rng.standard_normal()),
                                "unit": "s", "higher_is_better": False, "pair": pair, "run": run})
                out.append({"arm": arm, "metric": METRIC, "value": float(math.exp(mu + shift + rng.normal(0.0, sd))),
                            "unit": "chips/hand", "higher_is_better": False, "pair": pair, "run": run})
    return out


# One-sided Dunnett critical values at 95% (Dunnett 1955, table 1a; e.g. Hsu 1996, table E.3): comparisons
# with a control = k - 1, by error df. One comparison is Student's t.
DUNNETT_ONE_SIDED = [(2, 5, 2.44), (3, 5, 2.68), (4, 5, 2.85), (2, 10, 2.15), (3, 10, 2.34), (4, 10, 2.47),
                     (2, 20, 2.03), (3, 20, 2.19), (4, 20, 2.30), (2, math.inf, 1.92), (3, math.inf, 2.06),
                     (4, math.inf, 2.16)]


@pytest.mark.parametrize("comparisons,df,table", DUNNETT_ONE_SIDED)
def test_critical_value_matches_the_dunnett_table(comparisons, df, table):
    assert critical_value(comparisons, df) == pytest.approx(table, abs=0.005)  # the table gives two decimals


@pytest.mark.parametrize("df", [3, 12, 60, math.inf])
def test_one_comparison_is_students_t(df):
    assert critical_value(1, df) == pytest.approx(stats.t.ppf(0.95, df), abs=1e-7)


def test_critical_value_holds_the_simultaneous_level_by_simulation():
    # The definition, drawn directly: Z_0..Z_3 iid normal, S^2 ~ chi2_12/12, T_i = (Z_i - Z_0) / (sqrt2 S).
    rng = np.random.default_rng(11)
    n, m, df = 400_000, 3, 12
    z = rng.standard_normal((n, m + 1))
    s = np.sqrt(rng.chisquare(df, n) / df)
    t_max = ((z[:, 1:] - z[:, :1]) / math.sqrt(2)).max(axis=1) / s
    covered = np.count_nonzero(t_max <= critical_value(m, df))
    assert abs(covered - 0.95 * n) < 4 * math.sqrt(n * 0.05 * 0.95)


def test_a_clear_winner():
    result = best_of(blocked({"h16x2": 0.4, "h32x2": 0.0, "h64x3": 0.3, "h128x3": 0.5}, 4, 0.05, seed=1), RULE)
    assert result.outcome == "winner" and result.chosen == "h32x2"
    assert result.blocks == 4 and result.blocks_needed is None and result.incomplete == 0
    assert [r.in_best_set for r in result.rows] == [False, True, False, False]
    # the winner's ratio to the best of the others is below 1, and every other is worse beyond the margin
    assert result.row("h32x2").ratio < 1 and result.row("h32x2").high == 1.0
    for row in result.rows:
        if row.config != "h32x2":
            assert row.ratio > 1.05 * math.exp(result.allowance) and row.low == 1.0
    assert result.df == 9 and result.critical_value == pytest.approx(critical_value(3, 9))
    assert result.reason.startswith("h32x2: best exploitability") and "4 blocks" in result.reason
    assert more_blocks(result, RULE, 4) == 0


def test_the_block_effect_is_removed():
    # Blocks drift by a factor of e^2 either way; the configs differ by 10% with 1% noise: only a
    # two-way layout sees through that.
    result = best_of(blocked({"a": 0.1, "b": 0.0, "c": 0.2}, 4, 0.01, seed=2, block_sd=2.0), RULE)
    assert result.outcome == "winner" and result.chosen == "b"
    assert result.sd < 0.02


def test_configs_tied_within_the_margin_form_a_best_set_and_the_cheapest_is_picked():
    means = {"h16x2": 0.30, "h32x2": 0.0, "h64x3": 0.01, "h128x3": 0.35}  # h64x3 is 1% worse than h32x2
    costs = {"h16x2": 0.5, "h32x2": 2.0, "h64x3": 1.0, "h128x3": 3.0}
    result = best_of(blocked(means, 6, 0.005, seed=3, costs=costs), RULE)
    assert result.outcome == "best_set" and result.chosen == "h64x3"
    assert {r.config for r in result.rows if r.in_best_set} == {"h32x2", "h64x3"}
    assert all(r.high <= 1.05 for r in result.rows if r.in_best_set)
    assert "cannot be told apart" in result.reason and "cheapest by median s_per_iter" in result.reason
    assert result.row("h64x3").cost == pytest.approx(1.0, rel=0.05)
    assert more_blocks(result, RULE, 6) == 0


def test_a_best_set_without_a_cost_metric_keeps_the_apparent_best_and_says_so():
    rule = Rule(metric=METRIC, choose=f"min:{METRIC}", margin=0.05)
    result = best_of(blocked({"a": 0.01, "b": 0.0, "c": 0.4}, 6, 0.005, seed=3), rule)
    assert result.outcome == "best_set" and result.chosen == "b"
    assert "apparent best, as the rule names no cost metric" in result.reason


def test_noise_leaves_it_inconclusive_with_the_blocks_still_needed():
    means = {"a": 0.0, "b": 0.15, "c": 0.3, "d": 0.3}
    result = best_of(blocked(means, 3, 0.15, seed=4), RULE)
    assert result.outcome == "inconclusive" and result.chosen is None
    assert result.blocks_needed is not None and result.blocks_needed > 0
    assert f"about {result.blocks_needed} more blocks needed" in result.reason
    # P(best) is shown: the leader looks likely to be best, and that alone decides nothing
    leader = max(result.rows, key=lambda r: r.p_best)
    assert leader.p_best > 0.5 and sum(r.p_best for r in result.rows) == pytest.approx(1.0)
    # the estimate: with that many more blocks at this residual SD, the allowance would settle every
    # config that is now too close to the margin to call
    delta = math.log(1.05)
    gaps = [math.log(r.ratio) for r in result.rows if r.ratio > 1]
    open_gaps = [abs(g - delta) for g in gaps if abs(g - delta) < result.allowance]
    assert open_gaps
    b = result.blocks + result.blocks_needed
    assert critical_value(3, 3 * (b - 1)) * result.sd * math.sqrt(2 / b) <= min(open_gaps)
    # and the same experiment run long enough finds the true best
    longer = best_of(blocked(means, 60, 0.15, seed=4), RULE)
    assert longer.outcome == "winner" and longer.chosen == "a"


def test_more_blocks_doubles_what_ran_up_to_the_budget():
    result = best_of(blocked({"a": 0.0, "b": 0.15, "c": 0.3, "d": 0.3}, 3, 0.15, seed=4), RULE)
    assert result.outcome == "inconclusive"
    assert more_blocks(result, RULE, 3) == 3
    assert more_blocks(result, RULE, 8) == 4  # capped at max_repeats = 12
    assert more_blocks(result, RULE, 12) == 0


def test_one_block_is_always_inconclusive():
    result = best_of(blocked({"a": 0.0, "b": 2.0}, 1, 0.01, seed=5), RULE)
    assert result.outcome == "inconclusive" and result.blocks == 1 and result.blocks_needed == 1
    assert "needs at least 2 complete blocks, has 1" in result.reason
    assert more_blocks(result, RULE, 1) == 2  # to the rule's first-pass repeats (3)


def test_only_complete_blocks_count_and_the_rest_are_counted():
    samples = blocked({"a": 0.0, "b": 0.5, "c": 0.6}, 4, 0.01, seed=6)
    # c's exploitability of block 2 never came, and b's of block 3 was not positive
    samples = [s for s in samples if not (s["arm"] == "c" and s["pair"] == 2 and s["metric"] == METRIC)]
    for s in samples:
        if s["arm"] == "b" and s["pair"] == 3 and s["metric"] == METRIC:
            s["value"] = 0.0
    result = best_of(samples, RULE)
    assert result.blocks == 2 and result.incomplete == 2
    assert "2 incomplete blocks left out, 1 non-positive value dropped" in result.reason
    assert result.outcome == "winner" and result.chosen == "a"


def test_passes_number_their_blocks_apart():
    result = best_of(blocked({"a": 0.0, "b": 0.5}, 2, 0.01, seed=7, passes=2), RULE)
    assert result.blocks == 4  # (run, pair): pass 2's block 0 is not pass 1's


def test_a_config_over_the_cost_ratio_is_excluded_before_choosing():
    means = {"h16x2": 0.4, "h32x2": 0.2, "h128x3": 0.0}  # the largest is best but costs 10x the smallest
    costs = {"h16x2": 1.0, "h32x2": 3.0, "h128x3": 10.0}
    result = best_of(blocked(means, 4, 0.02, seed=8, costs=costs), RULE)
    assert result.chosen == "h32x2" and result.outcome == "winner"
    row = result.row("h128x3")
    assert row.excluded.startswith("costs 10") and "h16x2's s_per_iter, over the 8× allowed" in row.excluded
    assert row.in_best_set is None and row.p_best is None
    assert "excluded: h128x3 costs 10" in result.reason


def test_the_last_config_standing_wins_by_elimination():
    result = best_of(blocked({"h16x2": 0.4, "h128x3": 0.0}, 2, 0.02, seed=8,
                             costs={"h16x2": 1.0, "h128x3": 10.0}), RULE)
    assert result.outcome == "winner" and result.chosen == "h16x2"
    assert result.reason.startswith("h16x2: the only config that qualifies on exploitability")
    assert "excluded: h128x3 costs 10" in result.reason


def test_a_config_failing_its_quality_guard_is_excluded_and_named():
    rule = Rule(metric=METRIC, choose=f"min:{METRIC}", margin=0.05, guards=(Guard("loss_delta", max=0.05),))
    samples = blocked({"a": 0.0, "b": 0.3, "c": 0.5}, 4, 0.02, seed=9)
    qualities = [{"event": "quality", "name": "loss_delta", "value": v, "limit": 0.05, "arm": arm}
                 for arm, v in (("a", 0.2), ("b", 0.01), ("c", 0.01))]
    result = best_of(samples, rule, qualities)
    assert result.outcome == "winner" and result.chosen == "b"
    assert result.row("a").excluded == "guard loss_delta = 0.2 exceeds max 0.05"
    assert "excluded: a guard loss_delta = 0.2 exceeds max 0.05" in result.reason
    # a guard reported without an arm holds for every config: failed, nothing can be chosen, and more
    # blocks would not change that
    run_wide = best_of(samples, rule, [{"event": "quality", "name": "loss_delta", "value": 0.2, "limit": 0.05}])
    assert run_wide.outcome == "inconclusive" and run_wide.chosen is None
    assert run_wide.reason.startswith("no config qualifies on exploitability")
    assert more_blocks(run_wide, rule, 4) == 0
    # a rule's guard nobody reported keeps every config out, as decide() keeps an A/B undecided
    unreported = best_of(samples, rule)
    assert all(r.excluded == "guard loss_delta not reported" for r in unreported.rows)


def test_max_rules_choose_the_highest():
    samples = [dict(s, metric="win_rate", higher_is_better=True) for s in
               blocked({"a": 0.0, "b": 0.4, "c": 0.1}, 4, 0.02, seed=10) if s["metric"] == METRIC]
    result = best_of(samples, Rule(metric="win_rate", choose="max:win_rate"))
    assert result.outcome == "winner" and result.chosen == "b"
    assert result.row("b").ratio < 1 < result.row("a").ratio  # > 1 is worse whichever way the metric points


def test_a_second_value_in_one_block_is_a_warning_and_the_first_is_kept():
    samples = blocked({"a": 0.0, "b": 0.5}, 3, 0.01, seed=12)
    first = next(s for s in samples if s["arm"] == "a" and s["metric"] == METRIC)
    samples.append(dict(first, value=first["value"] * 100))
    result = best_of(samples, RULE)
    assert result.warnings == ("a: 1 more exploitability value in a block already measured; kept the first",)
    assert result.chosen == "a" and result.row("a").n == 3


def test_the_summary_is_plain_json():
    result = best_of(blocked({"a": 0.0, "b": 0.5}, 3, 0.01, seed=13), RULE)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["outcome"] == "winner" and data["chosen"] == "a" and data["blocks"] == 3
    assert set(data["configs"]) == {"a", "b"} and data["configs"]["a"]["in_best_set"] is True


@pytest.mark.parametrize("samples,rule,problem", [
    ([], Rule(metric=METRIC), "has no 'choose'"),
    ([], Rule(metric=METRIC, choose="lowest:x"), "expected 'min:METRIC' or 'max:METRIC'"),
    ([], RULE, "no samples of 'exploitability'"),
    ([{"arm": "a", "metric": METRIC, "value": 1.0, "higher_is_better": False}], RULE, "sample #0: missing 'pair'"),
    ([{"arm": "a", "metric": METRIC, "value": "x", "higher_is_better": False, "pair": 0}], RULE, "'value' should be"),
    ([{"arm": "a", "metric": METRIC, "value": 1.0, "higher_is_better": False, "pair": 0, "run": "2"}], RULE,
     "'run' should be an integer"),
    ([], Rule(metric=METRIC, choose=f"min:{METRIC}", margin=-0.1), "margin: expected a relative margin"),
])
def test_unusable_input_is_one_line(samples, rule, problem):
    with pytest.raises(StatsError) as err:
        best_of(samples, rule)
    assert problem in str(err.value) and "\n" not in str(err.value)


def test_a_quality_for_an_arm_must_name_it_as_a_string():
    with pytest.raises(StatsError, match="quality #0: 'arm' should be a string"):
        best_of(blocked({"a": 0.0, "b": 0.5}, 2, 0.01, seed=14), RULE,
                [{"name": "loss_delta", "value": 0.0, "limit": 1.0, "arm": 3}])


def test_equal_configs_rarely_yield_a_single_winner():
    """The simultaneous guarantee, counted: four equal configs, no margin (the hardest case), 5 blocks.

    The true best (any of them: they tie) stays in the best set with 95% confidence, so config a is left out
    in about 5% of draws — not much more (the bound holds) and not much less (d is not over-wide); and a
    single winner, which needs every other config left out, is rarer still.
    """
    rule = Rule(metric=METRIC, choose=f"min:{METRIC}", margin=0.0)
    draws, winners, a_out = 400, 0, 0
    for seed in range(draws):
        result = best_of(blocked({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}, 5, 0.1, seed=1000 + seed), rule)
        winners += result.outcome == "winner"
        a_out += not result.row("a").in_best_set
    expected, spread = 0.05 * draws, math.sqrt(draws * 0.05 * 0.95)
    assert expected - 3 * spread <= a_out <= expected + 3 * spread
    assert winners <= expected
