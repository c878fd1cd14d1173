"""The launch as the unit: a rule's launch plan, the variance split, the pairs a launch asks for, what would settle."""
from __future__ import annotations

import math
import random

from optseq.state.plan.model import Rule
from optseq.state.runs import sequential
from optseq.state.runs.launches import Split, launch_plan, pairs_per_launch, settle, split
from optseq.state.runs.passes import ABPasses


def test_the_default_plan_is_six_launches_first_within_eighteen():
    plan = launch_plan(Rule("m", repeats=6, max_repeats=108))
    assert (plan.first, plan.budget, plan.decidable) == (6, 18, True)
    assert sequential.first_decidable(18) == 6


def test_the_pair_budget_bounds_the_launches_and_a_tiny_budget_cannot_decide():
    assert launch_plan(Rule("m", repeats=6, max_repeats=12)).budget == 12  # a launch measures a pair at least
    assert launch_plan(Rule("m", repeats=1, max_repeats=5)).first == 5  # the least any budget decides with
    tiny = launch_plan(Rule("m", repeats=1, max_repeats=4))
    assert not tiny.decidable and tiny.budget == 4


def test_a_rule_sets_its_own_launches():
    plan = launch_plan(Rule("m", repeats=4, max_repeats=200, launches=8, max_launches=40))
    assert (plan.first, plan.budget) == (8, 40)
    # a first look cannot come before the fewest launches that can decide under that budget
    assert launch_plan(Rule("m", repeats=4, max_repeats=200, launches=2, max_launches=40)).first == \
        sequential.first_decidable(40)


def test_the_first_launches_share_the_pair_budget_out_over_the_first_look():
    assert ABPasses(Rule("m", repeats=6, max_repeats=12)).requested == 2
    assert ABPasses(Rule("m", repeats=6, max_repeats=108)).requested == 6
    assert ABPasses(Rule("m", repeats=6, max_repeats=12), replicate="pair").requested == 6  # pairs: as before


def groups(rng, launches: int, pairs: int, between: float, within: float) -> list[list[float]]:
    out = []
    for _ in range(launches):
        offset = rng.gauss(0, between)
        out.append([offset + rng.gauss(0, within) for _ in range(pairs)])
    return out


def test_the_split_tells_launch_variance_from_pair_variance():
    rng = random.Random(3)
    launchy = split(groups(rng, 40, 5, between=0.03, within=0.01))
    pairy = split(groups(rng, 40, 5, between=0.0, within=0.03))
    assert 0.8 < launchy.share_between < 1.0  # sb² 9e-4 against sw² 1e-4
    assert pairy.share_between < 0.1
    assert math.isclose(launchy.within, 0.01 ** 2, rel_tol=0.25)


def test_no_split_without_two_launches_or_a_launch_of_two_pairs():
    assert split([[0.01, 0.02, 0.0]]) is None
    assert split([[0.01], [0.02], [0.03]]) is None


def test_pairs_a_launch_asks_for_follow_kalibera_and_jones():
    # sqrt((c_L / c_p) · (sw² / sb²)): a launch 10 s, a pair 0.1 s, equal variances: 10 pairs
    found = Split(between=1e-4, within=1e-4, launches=3, launch_s=10.0, pair_s=0.1)
    assert found.optimum() == 10.0 and pairs_per_launch(found, cap=50) == 10
    assert pairs_per_launch(found, cap=4) == 4
    # launches that vary a lot and start cheaply: one pair each
    assert pairs_per_launch(Split(between=1e-3, within=1e-5, launches=3, launch_s=0.5, pair_s=0.5), cap=8) == 1
    # launches that do not vary at all: pairs are what buys precision, up to the cap
    assert pairs_per_launch(Split(between=0.0, within=1e-4, launches=3, launch_s=2.0, pair_s=0.2), cap=6) == 6
    assert pairs_per_launch(None, cap=3) == 3
    text = found.text(10)
    assert text == "variance 50% between launches, 50% within; a launch costs 10 s and a pair 0.1 s → 10 pairs a launch"


def test_what_would_settle_an_undecided_run():
    assert settle(above=5, below=1) is not None and settle(above=5, below=1) < settle(above=4, below=2)
    assert settle(above=3, below=3) is None and settle(above=10, below=10) is None
    assert settle(above=0, below=6) == settle(above=6, below=0)


def test_a_rule_that_fixes_its_pairs_a_launch_gets_them_every_launch():
    rule = Rule("m", repeats=6, max_repeats=120, pairs_per_launch=4)
    passes = ABPasses(rule)
    asked = []
    for pass_no in range(1, 8):
        asked.append(passes.requested)
        ratio = 1.0 + (0.01 if pass_no % 2 else -0.01)  # launches either side: no decision, more launches
        samples = [{"arm": arm, "metric": "m", "value": 100.0 * (ratio if arm == "candidate" else 1.0) + i * 1e-3 + pass_no * 1e-5,
                    "higher_is_better": True, "pair": i, "run": pass_no} for i in range(passes.requested)
                   for arm in (("baseline", "candidate") if (i + pass_no) % 2 else ("candidate", "baseline"))]
        step = passes.after_pass(samples, duration_s=10.0, pair_s=0.01)
        if not step.more:
            break
    assert asked == [4] * len(asked) and len(asked) == 7
