"""The hours-saved calculus against cases computed by hand (the numbers in the comments), and on the default plan."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from optseq.state.plan import loader as plan_mod
from optseq.state.plan.model import Plan
from optseq.state.calculus import orders, whatif
from optseq.state.calculus.inputs import p_median_at_least
from optseq.state.lifecycle.machine import PlanMachine

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
RULE = 'rule = { metric = "items_per_s", min_speedup = 1.1 }'


def plan_of(tmp_path, levers: str, volume: str, order: str = "") -> Plan:
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[plan]
title = "Hours"
as_of = 2026-11-01
lang = "en"

{levers}

{volume}

{order}
""", encoding="utf-8")
    return plan_mod.load(path)


def lever(lid: str, *, kind: str = "speedup", extra: str = "") -> str:
    return f"""
[[levers]]
id = "{lid}"
title = "{lid}"
kind = "{kind}"
plan_doc = "docs/{lid}.md"
run = ["true"]
{RULE if kind != "experiment" else ""}
{extra}
"""


def tail(hours_at_30s_per_iter: str = "configs = 4\niterations = 200\nruns = 3") -> str:
    """4 configs × 200 iterations × 3 runs × 30 s = 72 000 s = 20 h, after every lever."""
    return f"""
[volume]
s_per_iter = 30

[[volume.experiments]]
id = "later"
{hours_at_30s_per_iter}
"""


def report(plan, machine=None) -> dict:
    return whatif.compute(plan, machine or PlanMachine(plan))


def figures(rep: dict, lid: str) -> dict:
    return next(lv for lv in rep["levers"] if lv["id"] == lid)


class Replay:
    def __init__(self, plan):
        self.plan, self.machine, self.seq = plan, PlanMachine(plan), 0

    def add(self, table: str, **fields) -> None:
        self.seq += 1
        self.machine.apply(table, {"id": self.seq, "seq": self.seq, "at": "2026-11-02T10:00:00+00:00", **fields})


# -- the hand-computed cases ----------------------------------------------------------------------------
def test_one_lever(tmp_path):
    plan = plan_of(tmp_path, lever("fast", extra="effort_h = 2\nexpect = { speedup = 1.3, p_adopt = 1.0 }"), tail())
    fig = figures(report(plan), "fast")
    # V = 20 h; f = 1 · (1 − 1/1.3) = 0.3/1.3 = 0.230769; H = 1 · 0.230769 · 20 − 2 = 4.615385 − 2 = 2.615385
    assert fig["v_h"] == pytest.approx(20.0)
    assert fig["h"] == pytest.approx(6 / 1.3 - 2)
    # V* = C / (q · f) = 2 / 0.230769 = 8.666667 h
    assert fig["v_star_h"] == pytest.approx(2 * 1.3 / 0.3)
    assert (fig["s_source"], fig["q_source"], fig["share_source"]) == ("prior", "prior", "default")


def test_amdahl_share_below_one(tmp_path):
    plan = plan_of(tmp_path, lever("half", extra="share = 0.5\nexpect = { speedup = 2.0, p_adopt = 1.0 }")
                   + lever("coin", extra="share = 0.5\nexpect = { speedup = 2.0, p_adopt = 0.5 }"), tail())
    rep = report(plan)
    # S_eff = 1 / ((1 − 0.5) + 0.5/2) = 1/0.75 = 1.3333: saves 1 − 0.75 = 0.25 of the 20 h = 5 h
    assert figures(rep, "half")["h"] == pytest.approx(5.0)
    # the second lever runs on the first's stack: V = 20 · 0.75 = 15 h; q 0.5 · 0.25 · 15 = 1.875 h
    assert figures(rep, "coin")["v_h"] == pytest.approx(15.0)
    assert figures(rep, "coin")["h"] == pytest.approx(1.875)


def test_two_stacked_levers(tmp_path):
    plan = plan_of(tmp_path, lever("first", extra="expect = { speedup = 2.0, p_adopt = 1.0 }")
                   + lever("second", extra="expect = { speedup = 1.25, p_adopt = 1.0 }"), tail())
    rep = report(plan)
    # first: (1 − 1/2) · 20 = 10 h; second: (1 − 1/1.25) · 20 / 2 = 0.2 · 10 = 2 h; together 12 h
    assert figures(rep, "first")["h"] == pytest.approx(10.0)
    assert figures(rep, "second")["v_h"] == pytest.approx(10.0)
    assert figures(rep, "second")["h"] == pytest.approx(2.0)
    assert rep["plan_order"]["saved_h"] == pytest.approx(12.0)
    # the product commutes: with no experiment between them, either order saves the same
    assert rep["best_order"]["net_h"] == pytest.approx(12.0) and rep["agrees"] is True


def test_a_lever_whose_interval_straddles_one(tmp_path):
    plan = plan_of(tmp_path, lever("maybe"), tail())
    r = Replay(plan)
    stats = {"metric": "items_per_s", "n": 5, "estimate": 1.1, "ci_low": 0.95, "ci_high": 1.25,
             "ratios": [0.9, 1.0, 1.1, 1.2, 1.3]}
    r.add("runs", lever="maybe", status="succeeded", verdict="inconclusive", started="2026-11-02T10:00:00+00:00",
          ended="2026-11-02T10:30:00+00:00", summary={"stats": stats})
    assert r.machine.state("maybe") == "measured"
    rep = report(plan, r.machine)
    fig = figures(rep, "maybe")
    # p = 3/5 ratios ≥ 1.1; q = P(Binomial(5, 0.6) ≥ 3) = 0.6^5 + 5·0.6^4·0.4 + 10·0.6^3·0.4^2
    #   = 0.07776 + 0.2592 + 0.3456 = 0.68256
    assert fig["q"] == pytest.approx(0.68256) and fig["q_source"] == "measured"
    # C = 30 min of run = 0.5 h; H = 0.68256 · (1 − 1/1.1) · 20 − 0.5 = 1.241018 − 0.5 = 0.741018
    assert fig["cost_h"] == pytest.approx(0.5) and fig["runs_counted"] == 1
    assert fig["h"] == pytest.approx(0.68256 * (0.1 / 1.1) * 20 - 0.5)
    # at the interval's ends: S 0.95 → 0.68256 · (1 − 1/0.95) · 20 − 0.5 = −1.218484 (it would cost time);
    # S 1.25 → 0.68256 · 0.2 · 20 − 0.5 = 2.23024
    assert fig["h_low"] == pytest.approx(0.68256 * (1 - 1 / 0.95) * 20 - 0.5)
    assert fig["h_high"] == pytest.approx(2.23024)
    assert fig["h_low"] < 0 < fig["h_high"] and fig["straddles_one"]
    assert any("straddles 1" in note for note in rep["notes"])


def test_the_plans_order_loses(tmp_path):
    # exp (experiment): 1 config × 360 iterations × 10 s = 1 h a run, 2 runs at its place; later: 1 h at the end.
    # fast (infra): S 1.5, q 1, so f = 1/3; as an infra lever its adoption after exp has run forces a re-run.
    levers = lever("exp", kind="experiment") + lever("fast", kind="infra",
                                                    extra="expect = { speedup = 1.5, p_adopt = 1.0 }")
    volume = """
[volume]
s_per_iter = 10

[[volume.experiments]]
id = "exp"
lever = "exp"
configs = 1
iterations = 360
runs = 2

[[volume.experiments]]
id = "later"
configs = 1
iterations = 360
runs = 1
"""
    order = '[[order]]\ntitle = "experiment first"\nlevers = ["exp", "fast"]'
    rep = report(plan_of(tmp_path, levers, volume, order))
    planned, best = rep["plan_order"], rep["best_order"]
    # plan: exp → fast saves 1/3 · 1 h (later) = 0.3333 h and forces one re-run of exp on the new stack:
    # q · 1 h · (1 − 1/3) = 0.6667 h; net 0.3333 − 0.6667 = −0.3333 h
    assert planned["order"] == ["exp", "fast"]
    assert planned["saved_h"] == pytest.approx(1 / 3)
    assert planned["reruns"] == [{"experiment": "exp", "lever": "fast", "hours": pytest.approx(2 / 3)}]
    assert planned["net_h"] == pytest.approx(-1 / 3)
    # best: fast → exp saves 1/3 · (2 + 1) h = 1 h, no re-run; 1.3333 h better
    assert best["order"] == ["fast", "exp"] and best["net_h"] == pytest.approx(1.0) and best["reruns"] == []
    assert best["method"] == "every order" and best["tried"] == 2
    assert rep["agrees"] is False
    assert "disagrees" in rep["verdict"] and "+1.33 h" in rep["verdict"] and "1 fewer re-run" in rep["verdict"]


def test_a_gate_that_puts_infra_first_is_weighed_against_the_experiment_first(tmp_path):
    levers = lever("fast", kind="infra", extra="expect = { speedup = 1.5, p_adopt = 1.0 }") + lever(
        "exp", kind="experiment", extra='requires = "fast:decided"')
    volume = ('[volume]\ns_per_iter = 10\n[[volume.experiments]]\nid = "exp"\nlever = "exp"\nconfigs = 1\n'
              'iterations = 360\nruns = 2\n[[volume.experiments]]\nid = "later"\nconfigs = 1\niterations = 360\n'
              'runs = 1\n')
    rep = report(plan_of(tmp_path, levers, volume))
    assert rep["agrees"] is True and rep["best_order"]["tried"] == 1  # the gate leaves one order
    (check,) = rep["sequencing"]
    # as above: fast first nets 1 h, exp first −0.3333 h (one re-run): the gate is worth 1.3333 h
    assert (check["lever"], check["experiment"]) == ("fast", "exp")
    assert check["first_h"] == pytest.approx(1.0) and check["reverse_h"] == pytest.approx(-1 / 3)
    assert check["gain_h"] == pytest.approx(4 / 3) and check["holds"] and check["reverse_reruns"] == 1
    assert "fast first holds, by 1.33 h" in whatif.sequencing_text(check)


def test_greedy_beyond_eight_levers_finds_the_exhaustive_best(tmp_path, monkeypatch):
    speeds = [1.1, 1.2, 1.3, 1.5, 2.0]
    levers = "".join(lever(f"l{i}", kind="infra", extra=f"expect = {{ speedup = {s}, p_adopt = 0.5 }}")
                     for i, s in enumerate(speeds)) + lever("exp", kind="experiment")
    volume = ('[volume]\ns_per_iter = 10\n[[volume.experiments]]\nid = "exp"\nlever = "exp"\nconfigs = 1\n'
              'iterations = 360\nruns = 3\n[[volume.experiments]]\nid = "later"\nconfigs = 1\niterations = 360\n'
              'runs = 1\n')
    order = '[[order]]\ntitle = "experiment first"\nlevers = ["exp"]'
    plan = plan_of(tmp_path, levers, volume, order)
    exhaustive = report(plan)["best_order"]
    monkeypatch.setattr(orders, "EXHAUSTIVE", 3)
    greedy = report(plan)["best_order"]
    assert exhaustive["method"] == "every order" and greedy["method"] == "greedy"
    assert greedy["net_h"] == pytest.approx(exhaustive["net_h"])
    assert greedy["order"][-1] == "exp"  # every infra lever first: each forces a re-run after it


def test_bootstrap_probability_for_an_even_count():
    # n = 4, p = 2/4 at or above 1.1: P(≥ 3) + ½ P(= 2) = 5/16 + ½ · 6/16 = 8/16
    assert p_median_at_least([0.9, 1.05, 1.2, 1.3], 1.1) == pytest.approx(0.5)
    assert p_median_at_least([1.2, 1.3, 1.4], 1.1) == 1.0
    assert p_median_at_least([0.9, 0.95, 1.0], 1.1) == 0.0


# -- missing inputs, decided levers --------------------------------------------------------------------------------
def test_missing_inputs_are_named_and_left_out(tmp_path):
    plan = plan_of(tmp_path, lever("bare") + lever("half", extra="expect = { speedup = 1.5 }"), "")
    rep = report(plan)
    assert rep["volume"] == {"declared": False} and rep["best_order"] is None
    assert all(lv["h"] is None for lv in rep["levers"])
    assert rep["missing"][0].startswith("volume: the plan declares no [volume]")
    assert "bare: S and q: not measured and no prior (optseq --run bare, or declare expect = { speedup, p_adopt })" \
        in rep["missing"]
    assert "half: q: not measured and no prior (optseq --run half, or declare expect = { p_adopt })" in rep["missing"]
    assert "share not declared, 1 counted (the whole iteration): bare, half" in rep["defaults"]


def test_no_time_per_iteration_is_named(tmp_path):
    plan = plan_of(tmp_path, lever("fast", extra="expect = { speedup = 1.5, p_adopt = 1 }"),
                   '[volume]\n[[volume.experiments]]\nid = "x"\nconfigs = 1\niterations = 10\nruns = 1\n')
    rep = report(plan)
    assert "volume.s_per_iter: not declared (seconds per training iteration)" in rep["missing"]
    assert rep["volume"]["hours"] is None


def test_measured_time_per_iteration_and_an_adopted_lever(tmp_path):
    levers = lever("fast", kind="infra", extra="share = 0.5") + lever("exp", kind="experiment")
    volume = ('[volume]\ns_per_iter = 99\ns_per_iter_from = "exp:s_per_iter"\n[[volume.experiments]]\nid = "later"\n'
              'configs = 1\niterations = 3600\nruns = 1\n')
    plan = plan_of(tmp_path, levers, volume)
    r = Replay(plan)
    assert report(plan, r.machine)["volume"]["s_per_iter_source"] == "declared"  # 99 s until exp has run
    r.add("runs", lever="fast", status="succeeded", verdict="adopt", started="2026-11-02T10:00:00+00:00",
          ended="2026-11-02T10:06:00+00:00",
          summary={"stats": {"estimate": 2.0, "ci_low": 1.8, "ci_high": 2.2, "n": 6, "ratios": [2.0] * 6}})
    r.add("decisions", lever="fast", outcome="adopt", auto=True, runs=[1],
          stats={"estimate": 2.0, "ci_low": 1.8, "ci_high": 2.2})
    # exp measured 1.5 s an iteration with fast in the stack (f = 0.5 · (1 − 1/2) = 0.25): 2 s on the plan's stack
    r.add("runs", lever="exp", status="succeeded", verdict="h1", started="2026-11-02T11:00:00+00:00",
          ended="2026-11-02T11:01:00+00:00", infra={"adopted": ["fast"]},
          summary={"arms": {"h1": {"s_per_iter": {"median": 1.5, "unit": "s"}}}, "chosen": "h1"})
    rep = report(plan, r.machine)
    assert rep["volume"]["s_per_iter"] == pytest.approx(2.0) and rep["volume"]["s_per_iter_source"] == "measured"
    fig = figures(rep, "fast")
    # adopted: q = 1, S measured 2×; V = 3600 · 2 s = 2 h; C = 6 min = 0.1 h; H = 0.25 · 2 − 0.1 = 0.4 h
    assert (fig["q"], fig["q_source"], fig["s_source"]) == (1.0, "adopted", "measured")
    assert fig["v_h"] == pytest.approx(2.0) and fig["cost_h"] == pytest.approx(0.1)
    assert fig["h"] == pytest.approx(0.4)
    assert rep["stack"] == ["fast"]


# -- the default plan --------------------------------------------------------------------------------------------
def test_default_plan_before_any_run_uses_the_seeds_prior():
    plan = plan_mod.load(DEFAULT_PLAN)
    rep = report(plan)
    # 4 × 200 × 3 (model_size) + 4 × 200 × 2 + 5 × 200 + 4 × 200 = 5 800 iterations × 30 s = 48.33 h
    assert rep["volume"]["hours"] == pytest.approx(5800 * 30 / 3600)
    ob = figures(rep, "option_b")
    assert (ob["s"], ob["s_source"], ob["q"], ob["share"]) == (1.3, "prior", 0.5, 0.8)
    # a = 0.5 · 0.8 · (1 − 1/1.3) = 0.092308; H = 0.092308 · 48.33 = 4.4615 h (no cost declared yet)
    assert ob["h"] == pytest.approx(0.5 * 0.8 * (0.3 / 1.3) * 5800 * 30 / 3600)
    assert rep["plan_order"]["order"][:2] == ["option_b", "model_size"]
    (check,) = rep["sequencing"]
    # model_size first: option_b saves a · 28.33 h = 2.6154 h and forces a re-run of model_size (6.667 h a run):
    # 0.5 · 6.667 · (1 − 0.8 · 0.3/1.3) = 2.7179 h; net −0.1026 h, so infra first holds by 4.5641 h
    assert check["lever"] == "option_b" and check["experiment"] == "model_size" and check["holds"]
    assert check["reverse_h"] == pytest.approx(0.5 * 0.8 * (0.3 / 1.3) * 3400 * 30 / 3600
                                               - 0.5 * (800 * 30 / 3600) * (1 - 0.8 * 0.3 / 1.3))
    assert any(item.startswith("option_b: S 1.30× is a prior (seed: 인프라 1.3×") for item in rep["assumptions"])
    assert "volume.s_per_iter = 30 s (assumed)" in rep["assumptions"]
    assert any(item.startswith("amp: S and q: not measured") for item in rep["missing"])


def test_hours_by_lever_and_status(tmp_path):
    from optseq.state.sequencer import Sequencer

    with Sequencer.open(DEFAULT_PLAN, tmp_path / "state", mode="write") as seq:
        hours = whatif.hours_by_lever(seq.held)
        assert set(hours) == {lv.id for lv in seq.plan.levers}
        assert hours["option_b"] == pytest.approx(0.5 * 0.8 * (0.3 / 1.3) * 5800 * 30 / 3600)
        assert hours["amp"] is None and hours["cython_bot"] is None  # no S yet; adopted before the plan
        views = {v.id: v for v in seq.views.status().levers}
        assert views["option_b"].hours_saved == pytest.approx(hours["option_b"])


def test_a_live_runs_hours_count_in_its_cost(tmp_path):
    from optseq.state.sequencer import Sequencer
    from tests.state.one_lever import one_lever_plan

    argv = [sys.executable, str(ROOT / "tests" / "console" / "tiny_lever.py"), "--ratio", "1.5", "--log-lines", "0"]
    path = one_lever_plan(tmp_path, argv, extra=tail().replace("[volume]", "\n[volume]"))
    with Sequencer.open(path, tmp_path / "state", mode="write") as seq:
        assert seq.run_lever("lever").status == "succeeded"
        fig = figures(seq.views.whatif(), "lever")
        (run,) = seq.machine.runs.recent["lever"]
    # the final record a live run hands the machine carries no start: the run index keeps its first record's (times are
    # to the second, so a quick run may count 0 h; what matters is that it is counted, not unknown)
    assert run.started is not None and run.ended is not None and run.started <= run.ended
    assert fig["runs_counted"] == 1 and fig["runs_unknown"] == 0 and fig["run_h"] >= 0
    with Sequencer.open(path, tmp_path / "state", mode="read") as again:  # from the snapshot
        assert figures(again.views.whatif(), "lever")["runs_counted"] == 1
