"""Figures a benchmarker expects: each arm's median, IQR and n from the counted pairs, and the noise warning."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

from optseq.state.runs.pairs import book
from optseq.state.runs.stats import ArmFigures, arms_text, summarise, within_launch_spread
from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

AB = Path(__file__).parents[1] / "lever_scripts" / "ab.py"


def sample(run: int, pair: int, arm: str, value: float) -> dict:
    return {"event": "sample", "run": run, "pair": pair, "arm": arm, "metric": "s_per_iter", "value": value,
            "unit": "s", "higher_is_better": False}


def optseq(env: dict, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return proc


def plan_env(tmp_path: Path, cli_env: dict, args: list[str], rule: str = "", **env: str) -> dict:
    plan = one_lever_plan(tmp_path, ["python", str(AB), *args],
                          rule=rule or 'metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12')
    return dict(cli_env, OPTSEQ_PLAN=str(plan), **env)


def only_run(env: dict) -> dict:
    run, = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    return run


def lever_view(env: dict) -> dict:
    return next(v for v in json.loads(optseq(env, "status", "--json").stdout)["levers"] if v["id"] == "lever")


# -- the statistics ---------------------------------------------------------------------------------------------
def test_each_arm_is_summarised_over_the_counted_pairs_only():
    samples = [sample(1, i, arm, v) for i, (b, c) in enumerate([(2.0, 1.0), (2.2, 1.1), (2.4, 1.2), (2.6, 1.3)])
               for arm, v in (("baseline", b), ("candidate", c))]
    samples.append(sample(1, 4, "baseline", 99.0))  # a half pair: never counted, so in neither arm's figures
    stats = summarise(book(samples, "s_per_iter")).to_dict()
    assert stats["n"] == 4
    base, cand = stats["baseline"], stats["candidate"]
    assert (base["n"], base["min"], base["max"], base["unit"]) == (4, 2.0, 2.6, "s")
    assert base["median"] == statistics.median([2.0, 2.2, 2.4, 2.6])
    assert [round(q, 9) for q in (base["q1"], base["q3"])] == [2.15, 2.45]  # inclusive quartiles
    assert (cand["n"], cand["median"], cand["min"], cand["max"]) == (4, statistics.median([1.0, 1.1, 1.2, 1.3]), 1.0,
                                                                     1.3)
    assert arms_text(stats) == "2.3 (2.15–2.45) → 1.15 (1.075–1.225) s"
    assert arms_text(stats, names=True) == "baseline 2.3 (IQR 2.15–2.45) → candidate 1.15 (IQR 1.075–1.225) s"


def test_no_pairs_no_arm_figures():
    stats = summarise(book([sample(1, 0, "baseline", 2.0)], "s_per_iter")).to_dict()
    assert stats["n"] == 0 and stats["baseline"] is None and stats["candidate"] is None
    assert arms_text(stats) == "" and stats["noise"] is None


def test_the_baseline_spread_leaves_out_drift_between_launches():
    # every launch twice as fast as the last: the pairs cancel that; within a launch the values vary by 1%
    values = [(run, pair, 100.0 * run * (1 + 0.01 * pair)) for run in (1, 2, 3) for pair in range(3)]
    pairs = book([sample(r, p, arm, v) for r, p, v in values for arm in ("baseline", "candidate")],
                 "s_per_iter").pairs
    spread = within_launch_spread(pairs)
    assert spread is not None and spread < 0.02
    overall = ArmFigures.of([p.baseline for p in pairs])
    assert (overall.q3 - overall.q1) / overall.median > 0.5  # what the per-arm figures show: all of it


# -- through the CLI ---------------------------------------------------------------------------------------------
def test_per_arm_figures_in_runs_and_status_json(tmp_path, cli_env):
    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5"], OPTSEQ_LOADAVG="0")
    optseq(env, "--run", "lever")
    run = only_run(env)
    stats = run["summary"]["stats"]
    counted = [json.loads(line) for line in Path(run["samples_file"]).read_text().splitlines()]
    for arm, low, high in (("baseline", 90, 110), ("candidate", 140, 160)):
        figures = stats[arm]
        values = [s["value"] for s in counted if s["arm"] == arm]
        assert figures["n"] == stats["n"] == len(values) == 12
        assert figures["median"] == statistics.median(values) and low < figures["median"] < high
        assert figures["min"] == min(values) <= figures["q1"] <= figures["median"] <= figures["q3"] <= figures["max"]
        assert figures["max"] == max(values) and figures["unit"] == "items/s"
    latest = lever_view(env)["last_run"]
    assert (latest["id"], latest["status"], latest["verdict"]) == (run["id"], "succeeded", "adopt")
    assert latest["stats"]["baseline"] == stats["baseline"] and latest["stats"]["candidate"] == stats["candidate"]
    assert latest["stats"]["estimate"] == stats["estimate"] and "ratios" not in latest["stats"]
    assert latest["noise"] is None and not any(w.startswith("noisy") for w in run["warnings"])


def test_a_busy_machine_is_warned_on_the_run(tmp_path, cli_env):
    # the load reading is overridden: no test loads the machine to see the warning
    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5"], OPTSEQ_LOADAVG="1000")
    out = optseq(env, "--run", "lever").stdout
    cores = os.cpu_count()
    line = f"noisy: load average 1000.0 on {cores} core{'s' * (cores != 1)} while it ran; its figures may not repeat"
    assert f"\n  warning: {line}\n" in out, out
    run = only_run(env)
    assert run["warnings"][-1] == line and run["summary"]["stats"]["noise"] == line
    assert run["summary"]["verdict"]["outcome"] == "adopt"  # a warning, never a verdict
    assert lever_view(env)["last_run"]["noise"] == line
    assert line in optseq(env, "runs").stdout.splitlines()[1]
    # the decision carries it too, so the export's results say it beside the figures
    doc = optseq(env, "export").stdout
    row = next(r for r in doc.splitlines() if r.startswith("| A lever | adopt |"))
    assert "baseline " in row and " → candidate " in row and "items/s, n=12" in row and line in row


def test_a_baseline_wider_than_the_rule_resolves_is_warned(tmp_path, cli_env):
    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5", "--noise", "0.1"],
                   rule='metric = "items_per_s", min_speedup = 1.05, repeats = 6, max_repeats = 12',
                   OPTSEQ_LOADAVG="0")
    out = optseq(env, "--run", "lever").stdout
    run = only_run(env)
    stats = run["summary"]["stats"]
    assert stats["baseline_spread"] > 0.05
    noise = stats["noise"]
    assert noise.startswith("noisy: the baseline's spread within a launch (IQR ") and "load" not in noise
    assert "is wider than the 5% the rule must resolve (1.05×)" in noise
    assert run["warnings"][-1] == noise and f"warning: {noise}" in out


def test_a_quiet_baseline_on_an_idle_machine_is_not_warned(tmp_path, cli_env):
    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5", "--noise", "0.001"],
                   rule='metric = "items_per_s", min_speedup = 1.05, repeats = 6, max_repeats = 12',
                   OPTSEQ_LOADAVG="0.5")
    out = optseq(env, "--run", "lever").stdout
    run = only_run(env)
    assert run["summary"]["stats"]["noise"] is None and "warning" not in out
    assert run["summary"]["stats"]["baseline_spread"] < 0.05
