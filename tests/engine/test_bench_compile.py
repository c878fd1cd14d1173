"""The torch.compile bench as optseq runs it: a child process speaking the run protocol."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from engine.bench.report import ab_summaries, parse_lines


def bench(tmp_path, *argv, infra=None):
    env = dict(os.environ, OPTSEQ_ARTIFACTS=str(tmp_path))
    if infra is not None:
        env["OPTSEQ_INFRA"] = json.dumps(infra)
    proc = subprocess.run([sys.executable, "-m", "engine.bench", *argv], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=300)
    return proc, parse_lines(argv[0], proc.stdout.splitlines())


def test_compile_pairs_both_arms_logs_compile_time_and_guards_outputs(tmp_path):
    proc, run = bench(tmp_path, "compile", "--repeats", "2", "--warmup", "0",
                      infra={"model": {"hidden": 16, "layers": 2}})
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

