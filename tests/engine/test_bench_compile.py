"""The torch.compile bench as optseq runs it: a child process speaking the run protocol."""
from __future__ import annotations

import re

import pytest

from optseq.engine.bench.report import ab_summaries
from tests.engine.bench_child import run_bench

pytestmark = pytest.mark.slow  # real benches of the engine


def test_compile_pairs_both_arms_logs_compile_time_and_guards_outputs(tmp_path):
    proc, run = run_bench("compile", "--repeats", "2", "--warmup", "0",
                          infra={"model": {"hidden": 16, "layers": 2}}, artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run.status == "succeeded"
    assert sorted((s["arm"], s["pair"]) for s in run.samples) == [
        ("baseline", 0), ("baseline", 1), ("candidate", 0), ("candidate", 1)]
    (summary,) = ab_summaries(run.samples)
    assert summary.metric == "train_samples_per_s" and summary.higher_is_better and summary.n == 2
    compile_lines = [line for line in run.log if "(compile time)" in line]
    assert len(compile_lines) == 1 and compile_lines[0].startswith("compile: candidate first step")
    assert float(re.search(r"step ([0-9.]+) s", compile_lines[0]).group(1)) > 0
    (guard,) = run.quality
    assert guard["name"] == "max_abs_output_diff"
    assert 0 <= guard["value"] <= guard["limit"]
    assert any("baseline Toggles(amp='off', compile=False" in line
               and "candidate Toggles(amp='off', compile=True" in line for line in run.log)

