"""A screen's fit recovers known effects: exact data gives them back exactly, a block's own speed is taken out by
the block term, a stall is taken down by the robust fit, and bad observations are refused in one line."""
from __future__ import annotations

import math

import pytest

from optseq.state.screen.analysis import AnalysisError, Fit, Observation, fit
from optseq.state.screen.design import choose
from tests.state.screen.screen_data import observations

LEVERS = ("amp", "compile", "tensorrt", "option_a")
TRUE = {"amp": 1.25, "compile": 1.10, "tensorrt": 0.95, "option_a": 1.0}


def test_exact_data_gives_back_its_main_effects_and_interaction_through_block_offsets():
    d = choose(LEVERS, 32)  # the full factorial: every interaction clear
    obs = observations(d, 2, offsets=[1.0, 0.8], mains=TRUE, pair=("amp", "compile"), inter=0.9)
    f = fit(d, obs, higher_is_better=True)
    assert [e.name for e in f.mains] == list(LEVERS)
    for e in f.mains:
        assert e.ratio == pytest.approx(TRUE[e.name], rel=1e-9)
    ac = f.effect("amp×compile")
    assert ac.ratio == pytest.approx(0.9, rel=1e-9)
    assert all(e.ratio == pytest.approx(1.0, abs=1e-9) for e in f.interactions if e.name != "amp×compile")
    assert (f.blocks, f.runs, f.residual_df) == (2, 32, 32 - (1 + 1 + 4 + 6))
    assert Fit.from_dict(f.to_dict()) == f


def test_a_time_metric_is_turned_into_a_speed():
    d = choose(LEVERS, 24)
    times = [Observation(o.block, o.run, 1.0 / o.value) for o in observations(d, 2, mains=TRUE)]
    f = fit(d, times, higher_is_better=False)
    assert [round(e.ratio, 9) for e in f.mains] == [TRUE[x] for x in LEVERS]


def test_a_fraction_estimates_one_interaction_of_each_aliased_chain_and_names_its_aliases():
    d = choose(LEVERS, 24)  # 2^(4-1) IV: amp×compile = tensorrt×option_a
    f = fit(d, observations(d, 3, mains=TRUE, pair=("amp", "compile"), inter=1.2), higher_is_better=True)
    ac = f.effect("amp×compile")
    assert ac.ratio == pytest.approx(1.2) and ac.aliases == ("tensorrt×option_a",)
    assert [e.name for e in f.interactions] == ["amp×compile", "amp×tensorrt", "amp×option_a"]
    assert [round(e.ratio, 9) for e in f.mains] == [TRUE[x] for x in LEVERS]  # mains clear of every 2fi


def test_noisy_intervals_cover_the_truth_and_a_stall_is_taken_down():
    d = choose(LEVERS, 32)
    obs = observations(d, 4, noise=0.03, seed=5, mains=TRUE)
    clean = fit(d, obs, higher_is_better=True)
    for e in clean.mains:
        assert e.low < TRUE[e.name] < e.high and e.high / e.low < 1.12
    # one launch of amp's + level four times slow: least squares would move amp's ratio by 4^(1/32)...
    hit = next(i for i, o in enumerate(obs) if d.runs[o.run][0] == 1)
    stalled = obs[:hit] + [Observation(obs[hit].block, obs[hit].run, obs[hit].value / 4)] + obs[hit + 1:]
    robust = fit(d, stalled, higher_is_better=True)
    assert robust.downweighted >= 1
    assert abs(math.log(robust.mains[0].ratio / clean.mains[0].ratio)) < 0.01
    assert robust.mains[0].high / robust.mains[0].low < 1.15


@pytest.mark.parametrize("obs, said", [
    ([Observation(1, 99, 1.0)], "observation of run 99 in block 1: the design has runs 0 to 15"),
    ([Observation(1, 0, -2.0)], "run 0 in block 1 printed -2.0: a screen's metric must be a positive number"),
    ([Observation(1, 0, float("nan"))], "printed nan"),
    ([Observation(0, 0, 1.0)], "block 0 (blocks count from 1)"),
    ([Observation(1, r, 1.0) for r in range(11)], "11 observations cannot fit 11 terms (10 effects, 1 block)"),
])
def test_observations_the_fit_cannot_use_are_refused_in_one_line(obs, said):
    with pytest.raises(AnalysisError) as e:
        fit(choose(LEVERS, 32), obs, higher_is_better=True)
    assert said in str(e.value) and "\n" not in str(e.value)
