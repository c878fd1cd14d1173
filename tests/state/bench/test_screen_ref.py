"""`make screen-bench`'s pieces that run without a screen: the plans it screens (validated by the real CLI), how it
combines two independent screens' effects, and its bad input. The screens themselves are real runs of minutes: the
command is run by hand and writes docs/performance.md."""
from __future__ import annotations

import math
import subprocess
import sys
import tomllib

import pytest

from optseq.state.bench.screen_ref import CPU_TRAIN, cpu_train_plan, engine_plan, size_ratio
from tests.conftest import OPTSEQ, ROOT


def validate(path) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, "validate", str(path)], capture_output=True, text=True, timeout=120)


def test_the_engine_plan_at_another_size_changes_only_the_workloads_hidden_flag(tmp_path):
    path = engine_plan(512, tmp_path)
    proc = validate(path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    written = tomllib.loads(path.read_text(encoding="utf-8"))
    shipped = tomllib.loads((ROOT / "configs/examples/screen_engine/plan.toml").read_text(encoding="utf-8"))
    assert written["workload"]["command"][-1] == "--hidden=512"
    assert shipped["workload"]["command"][-1] == "--hidden=64"
    written["workload"]["command"][-1] = "--hidden=64"
    assert written == shipped


def test_cpu_train_as_one_workload_keeps_its_toggles_and_rules(tmp_path):
    path, ids = cpu_train_plan(tmp_path)
    proc = validate(path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    written = tomllib.loads(path.read_text(encoding="utf-8"))
    shipped = tomllib.loads((CPU_TRAIN / "plan.toml").read_text(encoding="utf-8"))
    assert ids == tuple(lever["id"] for lever in shipped["levers"]) and len(ids) == 4
    assert written["workload"]["command"] == ["python", "train.py"]
    assert written["workload"]["cwd"] == str(CPU_TRAIN)
    for mine, theirs in zip(written["levers"], shipped["levers"]):
        assert mine["arms"]["candidate_env"] == theirs["arms"]["candidate_env"]
        assert mine["kind"] == "speedup" and "requires" not in mine
        for key in ("metric", "min_speedup", "repeats", "max_repeats"):
            assert mine["rule"][key] == theirs["rule"][key]


def test_a_levers_dependence_on_size_is_the_ratio_of_its_effects_with_their_errors_combined():
    small = {"ratio": 1.0, "log_se": 0.1, "df": 10}
    large = {"ratio": 1.5, "log_se": 0.1, "df": 10}
    found = size_ratio("amp", small, large)
    assert found.ratio == pytest.approx(1.5)
    assert found.df == pytest.approx(20.0)  # Welch–Satterthwaite: equal errors, equal df, twice the df
    half = 2.085963 * math.sqrt(0.02)  # t(0.975, 20)
    assert found.low == pytest.approx(1.5 * math.exp(-half), rel=1e-5)
    assert found.high == pytest.approx(1.5 * math.exp(half), rel=1e-5)
    assert size_ratio("amp", small, {**large, "df": 0}) is None  # an effect with no error has no interval


@pytest.mark.parametrize("argv, said", [
    (["--sizes", "512,64"], "--sizes '512,64': expected two widths, small then large, like 64,512"),
    (["--sizes", "64"], "--sizes '64': expected two widths, small then large, like 64,512"),
    (["--sizes", "a,b"], "--sizes 'a,b': expected two whole numbers, like 64,512"),
    (["--budget", "0"], "--budget 0: a screen's budget is a number of launches, at least 1"),
])
def test_bad_input_is_one_line_and_runs_nothing(argv, said, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "optseq.state.bench.screen_ref", *argv, "--write",
                           str(tmp_path / "perf.md")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(said)
    assert not (tmp_path / "perf.md").exists()
