"""The iteration bench as a plan's workload runs it: one child process per configuration, its flags the levers."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tests.conftest import OPTSEQ, ROOT
from tests.engine.bench_child import INHERITED_KNOBS

pytestmark = pytest.mark.slow  # real Deep CFR iterations of the engine

TINY = ["--hidden=16", "--layers=2", "--traversals=4", "--train-steps=3", "--batch=32", "--warmup=1",
        "--iterations=2"]


def iteration(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_KNOBS}
    return subprocess.run([sys.executable, "-m", "optseq.engine.bench", "iteration", *argv], capture_output=True,
                          text=True, env=env, stdin=subprocess.DEVNULL, timeout=1800)


def result(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_defaults_time_a_sequential_fp32_eager_iteration_and_print_one_json_line():
    proc = iteration(*TINY)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert "h16x2" in lines[0] and "traversal sequential" in lines[0]
    assert "Toggles(amp='off', compile=False, device='cpu')" in lines[0]
    assert sum(line.startswith("warm-up ") for line in lines) == 1
    assert sum(line.startswith("iteration ") and " s (traverse " in line for line in lines) == 2
    out = result(proc)
    assert out["iter_per_s"] > 0 and out["iter_per_cpu_s"] > 0 and out["samples_per_s"] > 0
    assert math.isfinite(out["final_loss"]) and out["final_loss"] > 0


def test_the_three_levers_compose_in_one_launch():
    proc = iteration(*TINY, "--amp=bf16", "--compile=on", "--option-a=on")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "traversal option_a" in first and "Toggles(amp='bf16', compile=True, device='cpu')" in first
    assert result(proc)["iter_per_s"] > 0


def test_model_size_is_a_flag():
    proc = iteration(*TINY, "--hidden=40")
    assert proc.returncode == 0, proc.stderr
    assert "h40x2" in proc.stdout.splitlines()[0]


@pytest.mark.parametrize("flag, said", [
    ("--option-a=maybe", "argument --option-a: expected on or off, got 'maybe'"),
    ("--hidden=0", "argument --hidden: expected a positive integer, got '0'"),
    ("--amp=fp8", "argument --amp: invalid choice: 'fp8' (choose from"),
])
def test_a_bad_flag_is_one_line_naming_it(flag, said):
    proc = iteration(flag)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert said in proc.stderr.strip().splitlines()[-1]


def test_the_screen_engine_plan_launches_each_lever_as_a_flag_of_its_workload(tmp_path):
    """`optseq check` runs a lever's two arms once each: the plan's workload, and the same with the lever's flag."""
    plan = ROOT / "configs" / "examples" / "screen_engine" / "plan.toml"
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(tmp_path / "db"), "check", "option_a"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    argv = {arm: next(line for line in out.splitlines() if line.startswith(f"{arm}: argv ")) for arm in
            ("baseline", "candidate")}
    assert argv["baseline"].endswith("iteration --amp=off --compile=off --option-a=off --hidden=64")
    assert argv["candidate"].endswith("iteration --amp=off --compile=off --option-a=on --hidden=64")
    assert "traversal option_a" in out and "traversal sequential" in out
    # Option A hands the traversals the same answers in fp32, so the guard's loss does not move at all
    losses = {line.split(" = ")[1] for line in out.splitlines() if ": guard final_loss = " in line}
    assert len(losses) == 1
