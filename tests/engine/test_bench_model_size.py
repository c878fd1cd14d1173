"""The model-size experiment: configs train in blocks, in a random order within each, timed per iteration
and scored by exploitability; the seed moves with the block and the pass."""
from __future__ import annotations

import argparse
import itertools

import pytest

from optseq.engine.bench import model_size
from optseq.engine.bench.model_size import PLANS, block_order, config_name, traversal_mode
from optseq.engine.kit import Infra
from optseq.engine.bench.report import config_table, parse_lines
from tests.engine.bench_child import events, run_bench

# on one parallel worker (make test runs pytest -n): one real model_size run is read by the module
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("model_size")]  # real benches of the engine

NAMES = [config_name(h, l) for h, l in PLANS["ci"].configs]
ITERATIONS = PLANS["ci"].iterations


@pytest.fixture(scope="module")
def two_blocks():
    """One real child run as optseq launches it: two blocks, first pass."""
    proc, run = run_bench("model_size", "--repeats", "2", env={"OPTSEQ_PASS": "1", "OPTSEQ_ITERATIONS": ""})
    assert proc.returncode == 0, proc.stderr
    return proc, run


def test_every_config_runs_once_per_block_with_time_and_exploitability(two_blocks):
    _, run = two_blocks
    assert run.status == "succeeded"
    arms, metrics, cells = config_table(run.samples)
    assert sorted(arms) == sorted(NAMES) and metrics == ["s_per_iter", "exploitability"]
    assert all(not s["higher_is_better"] for s in run.samples)
    for name, block in itertools.product(NAMES, (0, 1)):
        mine = [s for s in run.samples if s["arm"] == name and s["pair"] == block]
        assert [s["metric"] for s in mine] == ["s_per_iter"] * ITERATIONS + ["exploitability"]
        assert all(s["value"] > 0 for s in mine[:-1]) and mine[0]["unit"] == "s"
        # Leduc's exploitability is at most the largest pot a player can lose (13 chips), never negative.
        assert 0 <= mine[-1]["value"] < 13 and mine[-1]["unit"] == "chips/hand"


def test_configs_run_in_a_seeded_random_order_within_each_block(two_blocks):
    _, run = two_blocks
    orders = []
    for block in (0, 1):
        ran = [s["arm"] for s in run.samples if s["pair"] == block and s["metric"] == "exploitability"]
        assert ran == block_order(NAMES, 1, block)
        orders.append(ran)
    # every config finishes its block before the next starts: the samples come config by config
    firsts = [s["arm"] for s in run.samples if s["pair"] == 0][::ITERATIONS + 1]
    assert firsts == orders[0]
    assert any(order != NAMES for order in orders)  # shuffled, not the plan's order


def test_blocks_train_from_their_own_seed(two_blocks):
    _, run = two_blocks
    value = {(s["arm"], s["pair"]): s["value"] for s in run.samples if s["metric"] == "exploitability"}
    assert all(value[(name, 0)] != value[(name, 1)] for name in NAMES)


def test_progress_counts_every_block(two_blocks):
    proc, _ = two_blocks
    progress = [e for e in events(proc.stdout) if e["event"] == "progress"]
    total = 2 * len(NAMES) * (ITERATIONS + 1)
    assert [p["done"] for p in progress] == list(range(1, total + 1))
    assert {p["total"] for p in progress} == {total}
    assert progress[-1]["msg"].startswith("block 2/2 ")


def in_process(monkeypatch, capsys, *, blocks, pass_no=None, iterations="1"):
    """model_size.run here (one torch thread, see conftest), its events parsed as optseq would."""
    monkeypatch.setenv("OPTSEQ_ITERATIONS", iterations)
    if pass_no is None:
        monkeypatch.delenv("OPTSEQ_PASS", raising=False)
    else:
        monkeypatch.setenv("OPTSEQ_PASS", str(pass_no))
    capsys.readouterr()
    model_size.run(argparse.Namespace(size="ci", repeats=blocks, device="cpu"), Infra())
    run = parse_lines("model_size", capsys.readouterr().out.splitlines())
    return {(s["arm"], s["pair"]): s["value"] for s in run.samples if s["metric"] == "exploitability"}, run


def test_a_second_pass_measures_new_blocks_and_a_replay_repeats_one(monkeypatch, capsys):
    first, run = in_process(monkeypatch, capsys, blocks=1)  # OPTSEQ_PASS unset: pass 1
    assert [s["metric"] for s in run.samples].count("s_per_iter") == len(NAMES)  # OPTSEQ_ITERATIONS=1 held
    second, _ = in_process(monkeypatch, capsys, blocks=1, pass_no=2)
    again, _ = in_process(monkeypatch, capsys, blocks=1, pass_no=1)
    assert set(first) == set(second) == {(name, 0) for name in NAMES}
    assert all(first[key] != second[key] for key in first)
    assert again == first  # same pass and block, same seed: the same numbers


@pytest.mark.parametrize("env,repeats,message", [
    ({"OPTSEQ_PASS": "0"}, 1, "OPTSEQ_PASS='0': model_size needs a positive integer"),
    ({"OPTSEQ_ITERATIONS": "two"}, 1, "OPTSEQ_ITERATIONS='two': model_size needs a positive integer"),
    ({}, 0, "--repeats 0: model_size needs at least one block"),
])
def test_bad_settings_stop_with_one_line(monkeypatch, env, repeats, message):
    for key in ("OPTSEQ_PASS", "OPTSEQ_ITERATIONS"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit, match=message.replace("(", r"\(")):
        model_size.run(argparse.Namespace(size="ci", repeats=repeats, device="cpu"), Infra())


def test_block_order_is_a_permutation_that_depends_on_block_and_pass():
    orders = {(p, b): tuple(block_order(NAMES, p, b)) for p in (1, 2) for b in range(6)}
    assert all(sorted(o) == sorted(NAMES) for o in orders.values())
    assert len(set(orders.values())) > 1
    assert block_order(NAMES, 1, 0) == block_order(NAMES, 1, 0)


def test_gpu_plan_is_the_seeds_experiment():
    gpu = PLANS["gpu"]
    assert len(gpu.configs) == 4 and gpu.iterations == 200
    assert any(h >= 1024 and l >= 6 for h, l in gpu.configs)


def test_traversal_follows_the_adopted_infra():
    assert traversal_mode(Infra()) == "sequential"
    assert traversal_mode(Infra(adopted=frozenset({"option_b"}))) == "option_b"
    assert traversal_mode(Infra(adopted=frozenset({"option_a"}))) == "option_a"
    assert traversal_mode(Infra(adopted=frozenset({"option_a", "option_b"}))) == "a+b"
