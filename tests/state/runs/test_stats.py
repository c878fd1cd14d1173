"""Paired statistics, the decision rule and multi-arm choice, checked against numpy and scipy called directly."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from optseq.state.runs.decide_rule import decide, guard_rows, more_pairs
from optseq.state.plan.model import Guard, Rule
from optseq.state.runs.stats import CONFIDENCE, N_RESAMPLES, SEED, StatsError, arms, median_ci, paired

# Recorded (baseline, candidate) pairs, one per A/B pair, as runs of the seed's levers report them.
SPEEDUP = [  # opponent_act_calls_per_s, the Cython bot: ~1.46x, 4% noise
    (41056.1, 64937.6), (43058.6, 60257.4), (40514.2, 60216.2), (41945.1, 61362.2), (42243.4, 57119.4),
    (43651.3, 61263.2), (42131.1, 61165.0), (40383.0, 62649.9), (42374.7, 61003.8), (40750.2, 63210.2),
    (39597.2, 57885.2), (41652.9, 59872.3)]
SLOWDOWN = [  # train_samples_per_s, a lever that costs ~20%
    (4815.5, 4026.7), (5103.6, 3966.1), (4898.7, 4166.1), (5390.0, 4121.4), (5047.6, 4224.6),
    (5351.3, 4110.4), (5314.5, 4337.2), (5157.1, 4026.8), (5272.8, 4201.4), (5433.7, 3951.6)]
THRESHOLD = [  # train_samples_per_s around the 1.1x bar, 6% noise: the CI straddles it at 7 and at 14 pairs
    (4676.7, 5840.3), (5122.5, 5994.6), (5064.8, 5713.7), (5308.1, 5427.0), (5390.2, 5684.1),
    (5355.9, 5543.7), (5550.2, 5931.5), (5144.8, 5941.1), (5608.3, 6369.0), (4731.5, 6031.3),
    (5347.1, 5687.9), (4895.2, 6168.2), (4820.9, 5917.9), (5622.5, 5196.5)]
TIMINGS = [  # s_per_iter, lower is better: 2.0 s -> 1.5 s
    (1.982, 1.442), (2.015, 1.57), (2.125, 1.422), (1.966, 1.532), (2.097, 1.519), (1.956, 1.513),
    (1.999, 1.491), (1.956, 1.518)]


def samples(pairs, metric="rate", higher_is_better=True, unit="calls/s", run=None):
    """Samples as the kit's pairs write them: A B B A, each saying whether its arm ran first."""
    out = []
    for i, (base, cand) in enumerate(pairs):
        for arm, value in (("baseline", base), ("candidate", cand)):
            s = {"event": "sample", "arm": arm, "metric": metric, "value": value, "unit": unit,
                 "higher_is_better": higher_is_better, "pair": i, "first": (arm == "baseline") == (i % 2 == 0)}
            if run is not None:
                s["run"] = run
            out.append(s)
    return out


def direct_ci(logs, method="BCa"):
    """scipy.stats.bootstrap called the documented way, with the module's seed and resample count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ci = sps.bootstrap((np.asarray(logs),), np.median, n_resamples=N_RESAMPLES, confidence_level=CONFIDENCE,
                           method=method, rng=np.random.default_rng(SEED)).confidence_interval
    return ci.low, ci.high


def sign_test_bounds(ratios):
    """One look: the classic exact sign-test bounds, from scipy's binomial law called directly."""
    n = len(ratios)
    c = next(c for c in range(n + 2) if c > n or sps.binom.sf(c - 1, n, 0.5) <= 0.05)
    ordered = sorted(ratios)
    return (ordered[n - c], ordered[c - 1]) if c <= n else (None, None)


RATE = Rule("rate", min_speedup=1.3, guards=(Guard("action_mismatches", max=0),), repeats=5, max_repeats=15)
OK = [{"event": "quality", "name": "action_mismatches", "value": 0, "limit": 0}]


# -- paired statistics --------------------------------------------------------------------


def test_estimate_bounds_and_p_match_the_exact_sign_test():
    st = paired(samples(SPEEDUP), "rate", threshold=1.45)
    ratios = np.array([c / b for b, c in SPEEDUP])
    assert st.n == 12 and st.dropped == 0 and st.unit == "calls/s" and st.higher_is_better
    assert st.ratios == pytest.approx(tuple(ratios), rel=1e-12)
    assert st.estimate == pytest.approx(float(np.median(ratios)), rel=1e-12)
    assert (st.ci_low, st.ci_high) == pytest.approx(sign_test_bounds(list(ratios)), rel=1e-12)
    assert st.needed == 10 and st.looks == (12,)  # one look at 12 pairs: 10 on one side, P = 0.019
    above = int((ratios > 1.45).sum())
    assert st.above == above and st.p_value == pytest.approx(sps.binom.sf(above - 1, 12, 0.5), rel=1e-9)
    assert st.ci_low < st.estimate < st.ci_high
    assert 1.40 < st.estimate < 1.50


def test_same_samples_same_interval():
    assert paired(samples(THRESHOLD), "rate") == paired(samples(THRESHOLD), "rate")


def test_lower_is_better_inverts_the_ratio():
    st = paired(samples(TIMINGS, "s_per_iter", higher_is_better=False, unit="s"), "s_per_iter")
    ratios = np.array([b / c for b, c in TIMINGS])
    assert not st.higher_is_better
    assert st.estimate == pytest.approx(float(np.median(ratios)), rel=1e-12)
    assert st.estimate > 1.25  # faster iterations read as > 1, like every other speedup
    assert (st.ci_low, st.ci_high) == pytest.approx(sign_test_bounds(list(ratios)), rel=1e-12)
    rule = Rule("s_per_iter", min_speedup=1.2, repeats=8, max_repeats=8)
    assert decide(st, rule).outcome == "adopt"
    # The same numbers read as throughput are a slowdown.
    as_rate = paired(samples(TIMINGS, "s_per_iter", higher_is_better=True), "s_per_iter")
    assert as_rate.estimate == pytest.approx(1 / st.estimate, rel=0.02)
    assert decide(as_rate, rule).outcome == "reject"


def test_unmatched_halves_and_non_positive_pairs_are_dropped_and_counted():
    data = samples(SPEEDUP[:6])
    data += [{"arm": "baseline", "metric": "rate", "value": 40000.0, "unit": "calls/s",
              "higher_is_better": True, "pair": 6}]  # its candidate never came
    data += samples([(0.0, 61000.0), (41000.0, -1.0), (41000.0, float("nan"))])  # pairs 0..2 again: give a run
    for s in data[-6:]:
        s["run"] = "r2"
    data += [{"arm": "other", "metric": "rate", "value": 1.0, "higher_is_better": True, "pair": 0},
             {"arm": "baseline", "metric": "latency", "value": 3.0, "higher_is_better": False, "pair": 0}]
    st = paired(data, "rate")
    assert st.n == 6
    assert st.dropped == 1 + 6
    assert st.ratios == pytest.approx(tuple(c / b for b, c in SPEEDUP[:6]))


def test_each_pass_is_a_look_and_a_repeated_pair_index_counts_once():
    st = paired(samples(THRESHOLD[:7], run="r1") + samples(THRESHOLD[7:], run="r2"), "rate", budget=21)
    assert st.n == 14 and st.looks == (7, 14)
    assert st.estimate == pytest.approx(float(np.median([c / b for b, c in THRESHOLD])))
    # two passes' samples under one tag: the second baseline and candidate of each pair index are not counted
    once = paired(samples(THRESHOLD[:7]) + samples(THRESHOLD[7:]), "rate")
    assert once.n == 7 and once.dropped == 14 and once.looks == (7,)


def test_too_few_pairs_give_no_interval():
    st = paired(samples(SPEEDUP[:2]), "rate")
    assert st.n == 2 and st.ci_low is None and st.ci_high is None and st.needed == 3  # more than there are
    assert st.estimate == pytest.approx(float(np.median([c / b for b, c in SPEEDUP[:2]])))
    empty = paired(samples(SPEEDUP), "other_metric")
    assert empty.n == 0 and empty.estimate is None and empty.ratios == ()


def test_identical_arms_give_a_point_and_are_rejected_below_the_bar():
    st = paired(samples([(100.0, 100.0)] * 6), "rate")  # a no-op lever under a coarse counter
    assert (st.ci_low, st.ci_high) == (1.0, 1.0)
    assert decide(st, Rule("rate", min_speedup=1.3, repeats=6, max_repeats=6)).outcome == "reject"
    # exactly at the bar it is neither: no pair is above or below
    assert decide(st, Rule("rate", min_speedup=1.0, repeats=6, max_repeats=6)).outcome == "inconclusive"


def test_median_ci_of_tied_values_matches_scipy_percentile():
    data = np.array([0.1, 0.1, 0.1, 0.1, 0.2])
    bca = direct_ci(data, "BCa")
    expected = direct_ci(data, "percentile") if any(map(math.isnan, bca)) else bca
    assert median_ci(data) == pytest.approx(expected)


def test_to_dict_is_plain_json():
    st = paired(samples(SPEEDUP), "rate", threshold=1.3)
    d = json.loads(json.dumps(st.to_dict()))
    assert d["n"] == 12 and d["estimate"] == st.estimate and d["ci_low"] == st.ci_low
    assert d["ratios"] == list(st.ratios) and d["p_value"] == st.p_value and d["looks"] == [12]
    assert json.loads(json.dumps(paired(samples(SPEEDUP[:1]), "rate").to_dict()))["ci_high"] is None


@pytest.mark.parametrize("bad", [
    {"arm": "baseline", "metric": "rate", "value": "fast", "higher_is_better": True, "pair": 0},
    {"arm": "baseline", "metric": "rate", "value": 1.0, "higher_is_better": "yes", "pair": 0},
    {"arm": "baseline", "metric": "rate", "value": 1.0, "higher_is_better": True, "pair": True},
    "rate=3",
])
def test_malformed_samples_are_not_counted_and_never_raise(bad):
    st = paired([bad] + samples(SPEEDUP[:6]), "rate")
    assert st.n == 6 and st.ratios == pytest.approx(tuple(c / b for b, c in SPEEDUP[:6]))


def test_a_sample_that_flips_direction_is_not_counted():
    data = samples(SPEEDUP[:3])
    data[2]["higher_is_better"] = False  # pair 1's baseline
    st = paired(data, "rate")
    assert st.n == 2 and st.higher_is_better and st.dropped == 2


# -- the decision rule --------------------------------------------------------------------


def test_clear_speedup_is_adopted():
    v = decide(paired(samples(SPEEDUP), "rate", budget=15), RATE, OK)
    assert v.outcome == "adopt"
    assert "lower bound clears 1.30×" in v.reason and "n=12" in v.reason and "12 of 12 pairs above" in v.reason
    assert v.guards == ({"name": "action_mismatches", "value": 0.0, "limit_max": 0.0, "limit_min": None,
                         "ok": True},)
    assert json.loads(json.dumps(v.to_dict()))["guards"][0]["ok"] is True


def test_clear_slowdown_is_rejected():
    rule = Rule("rate", min_speedup=1.1, repeats=7, max_repeats=21)
    st = paired(samples(SLOWDOWN), "rate")
    v = decide(st, rule)
    assert v.outcome == "reject" and "below 1.10×" in v.reason
    assert st.ci_high < 1.0
    assert more_pairs(st, rule, 10) == 0


def test_threshold_noise_stays_inconclusive_and_extends_to_the_budget():
    rule = Rule("rate", min_speedup=1.1, repeats=7, max_repeats=21)
    first = paired(samples(THRESHOLD[:7], run="r1"), "rate", budget=21)
    assert first.ci_low < 1.1 <= first.ci_high
    v = decide(first, rule)
    assert v.outcome == "inconclusive" and "straddle 1.10×" in v.reason
    assert more_pairs(first, rule, 7) == 7
    both = paired(samples(THRESHOLD[:7], run="r1") + samples(THRESHOLD[7:], run="r2"), "rate", budget=21)
    assert decide(both, rule).outcome == "inconclusive"
    assert more_pairs(both, rule, 14) == 7
    assert more_pairs(both, rule, 21) == 0  # budget spent: stays inconclusive, never a coin flip
    assert more_pairs(both, Rule("rate", min_speedup=1.1, repeats=7, max_repeats=30), 21) == 9


def test_a_look_spends_only_its_share_of_the_error():
    # 10 of 12 on one side decide a single planned look; a look at 12 of a 120-pair budget needs 11
    data = samples(THRESHOLD[:12])
    assert paired(data, "rate").needed == 10
    assert paired(data, "rate", budget=120).needed == 11


def test_decided_statistics_ask_for_no_more_pairs():
    assert more_pairs(paired(samples(SPEEDUP), "rate"), RATE, 12) == 0


def test_a_failed_guard_rejects_even_a_clear_speedup():
    qualities = [{"name": "action_mismatches", "value": 0, "limit": 0},
                 {"name": "action_mismatches", "value": 3, "limit": 0},
                 {"name": "action_mismatches", "value": 1, "limit": 0}]
    v = decide(paired(samples(SPEEDUP), "rate"), RATE, qualities)
    assert v.outcome == "reject"
    assert v.reason.startswith("guard action_mismatches = 3 exceeds max 0, though rate 1.46×")
    assert v.guards[0]["value"] == 3.0 and v.guards[0]["ok"] is False


def test_a_run_limit_not_named_by_the_rule_still_rejects():
    qualities = OK + [{"name": "loss_delta", "value": 0.2, "limit": 0.05},
                      {"name": "info_only", "value": 7.0}]
    v = decide(paired(samples(SPEEDUP), "rate"), RATE, qualities)
    assert v.outcome == "reject" and "guard loss_delta = 0.2 exceeds max 0.05" in v.reason
    assert [g["name"] for g in v.guards] == ["action_mismatches", "loss_delta"]


def test_the_strictest_of_rule_and_run_limits_applies():
    rule = Rule("rate", min_speedup=1.3, guards=(Guard("max_abs_error", max=0.01),))
    rows = guard_rows(rule, [{"name": "max_abs_error", "value": 0.005, "limit": 0.001}])
    assert rows[0]["limit_max"] == 0.001 and rows[0]["ok"] is False


def test_min_guards_and_nan_qualities_fail():
    rule = Rule("rate", min_speedup=1.3, guards=(Guard("win_rate", min=0.45), Guard("loss_delta", max=0.05)))
    st = paired(samples(SPEEDUP), "rate")
    v = decide(st, rule, [{"name": "win_rate", "value": 0.40, "limit": None},
                          {"name": "win_rate", "value": 0.50, "limit": None},
                          {"name": "loss_delta", "value": 0.01, "limit": 0.05}])
    assert v.outcome == "reject" and v.reason.startswith("guard win_rate = 0.4 is below min 0.45")
    v = decide(st, rule, [{"name": "win_rate", "value": 0.5, "limit": None},
                          {"name": "loss_delta", "value": float("nan"), "limit": 0.05}])
    assert v.outcome == "reject" and v.guards[1]["ok"] is False
    v = decide(st, rule, [{"name": "win_rate", "value": 0.5}, {"name": "loss_delta", "value": 0.01}])
    assert v.outcome == "adopt"


def test_an_unreported_guard_never_adopts():
    st = paired(samples(SPEEDUP), "rate")
    v = decide(st, RATE, [])
    assert v.outcome == "inconclusive" and v.reason.startswith("guard action_mismatches not reported")
    assert v.guards[0]["ok"] is None and v.guards[0]["value"] is None
    # A clear slowdown needs no guard to be rejected.
    slow = paired(samples(SLOWDOWN), "rate")
    assert decide(slow, RATE, []).outcome == "reject"


def test_too_few_pairs_are_inconclusive_and_ask_for_more():
    st = paired(samples(SPEEDUP[:2]), "rate", budget=15)
    v = decide(st, RATE, OK)
    assert v.outcome == "inconclusive" and "2 pairs cannot decide yet" in v.reason
    assert more_pairs(st, RATE, 2) == 3  # up to the rule's first pass of 5


def test_decide_refuses_statistics_of_another_metric():
    with pytest.raises(StatsError, match="statistics are for 'rate' but the rule decides on 'other'"):
        decide(paired(samples(SPEEDUP), "rate"), Rule("other"), OK)


def test_bad_quality_events_are_one_line_errors():
    with pytest.raises(StatsError, match=r"^quality #1 \(x\): 'value' should be a number, got None$"):
        decide(paired(samples(SPEEDUP), "rate"), RATE, OK + [{"name": "x", "value": None}])


# -- multi-arm experiments ----------------------------------------------------------------

# model_size: 3 repeats of each config; exploitability (lower is better) and seconds per iteration.
CONFIGS = {
    "h256x3": ([0.081, 0.079, 0.083], [1.02, 0.98, 1.01]),
    "h512x4": ([0.056, 0.054, 0.057], [2.10, 2.05, 2.16]),
    "h1024x6": ([0.042, 0.040, 0.041], [5.40, 5.61, 5.52]),
    "h2048x8": ([0.036, 0.037, 0.035], [14.1, 13.8, 14.4]),
}


def config_samples(configs=CONFIGS):
    out = []
    for arm, (expl, secs) in configs.items():
        for i, (e, s) in enumerate(zip(expl, secs)):
            out.append({"arm": arm, "metric": "exploitability", "value": e, "unit": "mbb/g",
                        "higher_is_better": False, "pair": i})
            out.append({"arm": arm, "metric": "s_per_iter", "value": s, "unit": "s",
                        "higher_is_better": False, "pair": i})
            out.append({"arm": arm, "metric": "gpu_mem_gb", "value": 1.0, "higher_is_better": False, "pair": i})
    return out


MODEL_SIZE = Rule("exploitability", choose="min:exploitability", cost_metric="s_per_iter", max_cost_ratio=8.0,
                  repeats=1, max_repeats=3)


def test_arms_medians_and_intervals_match_numpy_and_scipy():
    table = arms(config_samples(), MODEL_SIZE)
    assert table.arms == tuple(CONFIGS)
    assert table.get("h256x3", "gpu_mem_gb") is None  # the rule does not read it
    for arm, (expl, secs) in CONFIGS.items():
        row = table.get(arm, "exploitability")
        assert row.n == 3 and row.median == pytest.approx(float(np.median(expl))) and row.unit == "mbb/g"
        assert not row.higher_is_better
        assert (row.ci_low, row.ci_high) == pytest.approx(direct_ci(np.array(expl)))
        assert table.get(arm, "s_per_iter").median == pytest.approx(float(np.median(secs)))
    assert arms(config_samples()).get("h256x3", "gpu_mem_gb").n == 3
    d = json.loads(json.dumps(table.to_dict()))
    assert d["h1024x6"]["exploitability"]["median"] == pytest.approx(0.041)


def test_arms_with_fewer_than_three_values_have_no_interval():
    row = arms(config_samples({"a": ([0.05], [1.0])})).get("a", "exploitability")
    assert row.n == 1 and row.median == 0.05 and row.ci_low is None and row.ci_high is None


# -- the CLI stays light ----------------------------------------------------------------------


def test_importing_the_statistics_does_not_import_scipy_or_numpy():
    code = ("import sys, optseq.state.runs.stats, optseq.state.runs.decide_rule; "
            "print(sorted(m for m in ('scipy', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
