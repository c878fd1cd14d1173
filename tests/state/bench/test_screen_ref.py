"""`make screen-bench`'s pieces that run without a screen: the plans it screens (validated by the real CLI), how it
combines two independent screens' effects, and its bad input. The screens themselves are real runs of minutes: the
command is run by hand and writes docs/performance.md."""
from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import tomllib

import pytest
from msgspec.structs import replace

from optseq.state.bench.screen_ref import CPU_TRAIN, cpu_train_plan, engine_plan, screen, size_ratio
from optseq.state.bench.screen_ref_doc import screen_lines
from optseq.state.screen_record import Effect, Report
from tests.conftest import OPTSEQ, ROOT
from tests.state.runs.test_screen_run import plan_file


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
    small = Effect(name="amp", levers=["amp"], ratio=1.0, log_se=0.1, df=10)
    large = Effect(name="amp", levers=["amp"], ratio=1.5, log_se=0.1, df=10)
    found = size_ratio("amp", small, large)
    assert found.ratio == pytest.approx(1.5)
    assert found.df == pytest.approx(20.0)  # Welch–Satterthwaite: equal errors, equal df, twice the df
    half = 2.085963 * math.sqrt(0.02)  # t(0.975, 20)
    assert found.low == pytest.approx(1.5 * math.exp(-half), rel=1e-5)
    assert found.high == pytest.approx(1.5 * math.exp(half), rel=1e-5)
    assert size_ratio("amp", small, replace(large, df=0)) is None  # an effect with no error has no interval
    assert size_ratio("amp", small, Effect(name="amp", levers=["amp"], ratio=1.5)) is None  # an older fit's: none


def test_a_real_screens_summary_is_read_as_its_types_into_the_sections_tables(tmp_path):
    # the real CLI's `--run screen --json` on the stand-in bench (fast 1.5×, wide 1.3×, null nothing, fuse 1.4× with
    # fast on), read back by the bench as a screen_record.Report and said as the section says a screen
    found = screen("bench", plan_file(tmp_path, env='SCREEN_FIXED = "1"'), ("fast", "wide", "null", "fuse"), None,
                   lambda line: None)
    assert found.exit_code == 0 and isinstance(found.report, Report), found.error
    assert found.report.fit is not None and [e.name for e in found.report.fit.mains] == ["fast", "wide", "null", "fuse"]
    assert found.main("fast") is found.report.fit.mains[0] and found.main("gone") is None
    lines = screen_lines(dataclasses.replace(found, levers=(*found.levers, "gone")), "the stand-in")
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[1:] for line in lines if line.startswith("| ")}
    assert [rows[lever][1] for lever in ("fast", "wide", "null", "fuse")] == ["adopt", "adopt", "reject", "adopt"]
    assert rows["fast"][0].startswith("1.") and rows["fast"][0].endswith("]") and "×" in rows["fast"][0]
    assert rows["gone"] == ["not measured", "undecided", " |"]  # a lever the screen never held
    assert rows["fast×fuse"][0].startswith("1.4") and rows["fast×fuse"][1] == "— |"
    assert any(line.startswith("Interactions found: fast × fuse: ") for line in lines), lines
    confirmed = next(line for line in lines if line.startswith("Confirmed "))
    assert confirmed.startswith(f"Confirmed fast + fuse against the stack by the paired test (run "
                                f"{found.report.confirmed.run}): adopt (rate ")
    assert "block 2" not in lines[2] and lines[2].startswith("2^4 full factorial, 16 runs a block; ")


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
