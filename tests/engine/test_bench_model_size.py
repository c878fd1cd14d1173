"""The model-size experiment: every config trains, is timed per iteration and scored by exploitability."""
from __future__ import annotations

from engine.bench.model_size import PLANS, config_name, traversal_mode
from engine.bench.protocol import Infra
from engine.bench.report import config_table
from tests.engine.bench_child import run_bench


def test_one_arm_per_config_with_time_and_exploitability(tmp_path):
    proc, run = run_bench("model_size", "--repeats", "1", "--warmup", "0", artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run.status == "succeeded"
    names = [config_name(h, l) for h, l in PLANS["ci"].configs]
    arms, metrics, cells = config_table(run.samples)
    assert arms == names
    assert metrics == ["s_per_iter", "exploitability"]
    for name in names:
        seconds, n, unit = cells[(name, "s_per_iter")]
        assert n == 1 and seconds > 0 and unit == "s"
        value, n, _ = cells[(name, "exploitability")]
        # Leduc's exploitability is at most the largest pot a player can lose (13 chips), never negative.
        assert n == 1 and 0 <= value < 13
    assert all(not s["higher_is_better"] for s in run.samples)


def test_gpu_plan_is_the_seeds_experiment():
    gpu = PLANS["gpu"]
    assert len(gpu.configs) == 4 and gpu.iterations == 200
    assert any(h >= 1024 and l >= 6 for h, l in gpu.configs)


def test_traversal_follows_the_adopted_infra():
    assert traversal_mode(Infra()) == "sequential"
    assert traversal_mode(Infra(adopted=frozenset({"option_b"}))) == "option_b"
    assert traversal_mode(Infra(adopted=frozenset({"option_a"}))) == "option_a"
    assert traversal_mode(Infra(adopted=frozenset({"option_a", "option_b"}))) == "a+b"
