"""The commit gate's rule (state/runs/commit_gate.py): the tolerance as a threshold, the rule a compare runs, its
verdicts and exit codes, each checked on its own and through the pass loop a compare runs (ABPasses over pairs)."""
from __future__ import annotations

import math

import pytest

from optseq.state.kinds import CompareVerdict
from optseq.state.plan.model import Guard
from optseq.state.runs import commit_gate
from optseq.state.runs.passes import ABPasses


@pytest.mark.parametrize("tolerance", [0.001, 0.03, 0.05, 0.25, commit_gate.MAX_TOLERANCE])
def test_the_threshold_is_the_speed_ratio_at_which_head_takes_one_plus_the_tolerance_of_base_time(tolerance):
    ratio = commit_gate.threshold(tolerance)
    assert ratio < 1.0
    assert math.isclose(1.0 / ratio, 1.0 + tolerance)


def test_a_larger_tolerance_is_a_lower_bar():
    bars = [commit_gate.threshold(t) for t in (0.01, 0.05, 0.10, 0.50)]
    assert bars == sorted(bars, reverse=True)


def test_the_rule_is_the_lever_rule_at_the_threshold_with_its_budget_and_guards():
    guard = Guard(name="loss", max=1.0)
    rule = commit_gate.rule("s_per_iter", 0.05, repeats=10, max_repeats=160, guards=(guard,))
    assert rule.metric == "s_per_iter"
    assert math.isclose(rule.min_speedup, 1 / 1.05)
    assert (rule.repeats, rule.max_repeats) == (10, 160)
    assert rule.guards == (guard,)
    assert rule.choose is None


def test_the_rule_never_allows_fewer_pairs_than_its_first_pass():
    rule = commit_gate.rule("m", 0.05, repeats=40, max_repeats=10)
    assert (rule.repeats, rule.max_repeats) == (40, 40)


def test_the_defaults_are_the_gate_the_readme_describes():
    rule = commit_gate.rule("m", commit_gate.DEFAULT_TOLERANCE)
    assert commit_gate.DEFAULT_TOLERANCE == 0.05
    assert (rule.repeats, rule.max_repeats) == (commit_gate.DEFAULT_REPEATS, commit_gate.DEFAULT_MAX_REPEATS)


@pytest.mark.parametrize(("outcome", "verdict"), [("adopt", "not slower"), ("reject", "slower"),
                                                  ("inconclusive", "inconclusive")])
def test_each_rule_outcome_has_its_gate_verdict(outcome, verdict):
    assert commit_gate.verdict_of(outcome) == verdict


@pytest.mark.parametrize("outcome", ["adopt", "reject", "inconclusive"])
def test_a_broken_guard_is_its_own_verdict_whatever_the_speed(outcome):
    assert commit_gate.verdict_of(outcome, guard_failed=True) == "guard"


def test_an_outcome_the_rule_never_gives_is_refused():
    with pytest.raises(ValueError, match="defer"):
        commit_gate.verdict_of("defer")


def test_every_verdict_has_an_exit_code_of_its_own_and_none_is_bad_input_or_success_but_not_slower():
    codes = commit_gate.EXIT
    assert set(codes) == set(CompareVerdict)
    assert len(set(codes.values())) == len(codes)
    assert codes["not slower"] == 0
    assert 2 not in codes.values() and 130 not in codes.values()  # bad input and Ctrl-C, as for every command


@pytest.mark.parametrize(("tolerance", "text"), [(0.05, "5%"), (0.025, "2.5%"), (0.001, "0.1%"), (0.5, "50%")])
def test_the_tolerance_reads_as_a_person_writes_it(tolerance, text):
    assert commit_gate.tolerance_text(tolerance) == text


@pytest.mark.parametrize("tolerance", [0.05, 0.025, 0.001, 0.123])
def test_the_tolerance_text_parses_back_to_the_tolerance(tolerance):
    assert math.isclose(commit_gate.parse_tolerance(commit_gate.tolerance_text(tolerance)), tolerance)


@pytest.mark.parametrize("bad", ["5 %", "30", "0%", "-3%", "abc", True, 2])
def test_a_tolerance_outside_its_forms_is_refused_in_one_line(bad):
    with pytest.raises(commit_gate.ToleranceError) as refused:
        commit_gate.parse_tolerance(bad)
    assert "\n" not in str(refused.value) and "tolerance" in str(refused.value)


def pairs(ratios: list[float], base: float = 2.0) -> list[dict]:
    """s_per_iter samples of one pass: each pair BASE then HEAD (alternating who runs first), HEAD at `ratio`
    of BASE's speed (a time metric: HEAD takes base / ratio)."""
    out = []
    for i, ratio in enumerate(ratios):
        for arm, value in (("baseline", base), ("candidate", base / ratio)):
            out.append({"event": "sample", "arm": arm, "metric": "s_per_iter", "value": value, "unit": "s",
                        "higher_is_better": False, "pair": i, "first": (arm == "baseline") == (i % 2 == 0),
                        "run": 1})
    return out


def judged(ratios: list[float], tolerance: float = 0.05) -> str:
    """The gate's verdict on one pass of pairs, through the pass loop a compare runs."""
    passes = ABPasses(commit_gate.rule("s_per_iter", tolerance, repeats=len(ratios), max_repeats=len(ratios)),
                      replicate="pair")
    step = passes.after_pass(pairs(ratios))
    assert step.failure is None and step.verdict is not None
    return commit_gate.verdict_of(step.verdict.outcome)


def test_head_as_fast_as_base_is_not_slower():
    assert judged([1.0 + 0.002 * (i % 3 - 1) for i in range(40)]) == "not slower"


def test_head_taking_a_fifth_longer_is_slower_at_a_five_percent_tolerance():
    assert judged([1 / 1.2 + 0.002 * (i % 3 - 1) for i in range(40)]) == "slower"


def test_a_slowdown_inside_a_wide_tolerance_passes_the_gate():
    ratios = [1 / 1.2 + 0.002 * (i % 3 - 1) for i in range(40)]
    assert judged(ratios, tolerance=0.5) == "not slower"
