"""Decisions through the CLI on stand-in benches whose noise is a real machine's: each launch its own speed, drift
under each arm order, output rounded to three digits, a candidate that stalls. Every value is seeded, so each
test asserts the decision optseq makes, never a timing: every rule fixes its pairs a launch, which the run
would otherwise choose from the launch and pair costs it measures."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

BENCH = Path(__file__).parent / "lever_scripts" / "real_noise.py"


def run(tmp_path: Path, cli_env: dict, *args: str, rule: str) -> dict:
    plan = one_lever_plan(tmp_path, ["python", str(BENCH), *args], rule=rule, timeout=300, title="Real noise")
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    out = json.loads(proc.stdout)["runs"][0]
    assert out["status"] == "succeeded", out
    return out


def test_every_launch_its_own_speed_is_not_an_effect(tmp_path, cli_env):
    # an A/A lever whose launches run the candidate 3% fast, then 3% slow, in turn: every pair of a launch
    # shares its launch's speed, so six pairs all on one side say nothing; counted as pairs, this adopted
    out = run(tmp_path, cli_env, "--ratio", "1.0", "--launch-offsets", "3,-3",
              rule='metric = "items_per_s", min_speedup = 1.0, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    stats = out["summary"]["stats"]
    assert out["decision"] is None and out["verdict"] == "inconclusive", out["message"]
    assert stats["replicate"] == "launch" and stats["launches"] >= 6
    assert abs(stats["above"] - stats["below"]) <= 1  # the launches, not the pairs, were counted
    assert "would not likely settle it" in out["message"]


@pytest.mark.parametrize("order", ["alternate", "random"])
def test_drift_under_a_counterbalanced_order_is_not_an_effect(tmp_path, cli_env, order):
    # the machine speeds up 1% a call: an arm measured second in every pair would look 1% faster
    out = run(tmp_path, cli_env, "--ratio", "1.0", "--drift", "0.01", "--order", order,
              rule='metric = "items_per_s", min_speedup = 1.02, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    assert out["decision"] != "adopt", out["message"]


def test_a_bench_that_runs_the_baseline_first_in_every_pair_is_not_decided(tmp_path, cli_env):
    out = run(tmp_path, cli_env, "--ratio", "1.0", "--drift", "0.01", "--order", "baseline-first",
              rule='metric = "items_per_s", min_speedup = 1.0, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    assert out["decision"] is None and "the baseline ran first in all" in out["message"], out["message"]


def test_output_rounded_to_three_digits_is_honest_data(tmp_path, cli_env):
    # 100-ish throughputs printed to three digits repeat exactly across launches: never a replay
    out = run(tmp_path, cli_env, "--ratio", "1.5", "--digits", "3", "--noise", "0.002",
              rule='metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    assert out["decision"] == "adopt", out["message"]
    assert out["summary"]["stats"]["dropped"] == 0


def test_output_that_never_varies_is_counted_too(tmp_path, cli_env):
    # integer precision and no noise: every launch prints the very same numbers, which are still fresh
    out = run(tmp_path, cli_env, "--ratio", "1.5", "--digits", "2", "--noise", "0",
              rule='metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    assert out["decision"] == "adopt", out["message"]


def test_a_candidate_that_stalls_more_than_its_median_gains_is_not_adopted(tmp_path, cli_env):
    # 1.3x faster in the median, but one call in ten is 20x slower: in total time the candidate loses
    out = run(tmp_path, cli_env, "--ratio", "1.3", "--stall", "0.1",
              rule='metric = "items_per_s", min_speedup = 1.1, repeats = 6, max_repeats = 72, pairs_per_launch = 6')
    stats = out["summary"]["stats"]
    assert stats["estimate"] > 1.2 and stats["mean_ratio"] < 1.1
    assert out["decision"] is None and "but total time does not" in out["message"], out["message"]
