"""The AMP bench as optseq runs it: a child process speaking the run protocol."""
from __future__ import annotations

import pytest

from optseq.engine.bench.report import ab_summaries
from tests.engine.bench_child import run_bench

pytestmark = pytest.mark.slow  # real benches of the engine

SMALL = {"model": {"hidden": 16, "layers": 2}}


def test_amp_pairs_both_arms_and_guards_the_loss(tmp_path):
    proc, run = run_bench("amp", "--repeats", "2", "--warmup", "0", infra=SMALL, artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run.status == "succeeded"
    assert run.env["torch"] and run.env["device"] == "cpu"
    pairs = sorted((s["arm"], s["pair"]) for s in run.samples)
    assert pairs == [("baseline", 0), ("baseline", 1), ("candidate", 0), ("candidate", 1)]
    assert all(s["metric"] == "train_samples_per_s" and s["value"] > 0 and s["higher_is_better"] for s in run.samples)
    (summary,) = ab_summaries(run.samples)
    assert summary.n == 2
    (guard,) = run.quality
    assert guard["name"] == "loss_delta"
    assert 0 <= guard["value"] <= guard["limit"]
    # The model came from the infra state, and the arms differ only in AMP.
    assert any("hidden=16, layers=2" in line for line in run.log)
    assert any("baseline Toggles(amp='off'" in line and "candidate Toggles(amp='bf16'" in line for line in run.log)


def test_amp_already_adopted_is_remeasured_without_vs_with(tmp_path):
    proc, run = run_bench("amp", "--repeats", "1", "--warmup", "0",
                          infra={"adopted": ["amp"], **SMALL}, artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert any("baseline Toggles(amp='off'" in line for line in run.log)


def test_bad_model_in_infra_is_one_line_error(tmp_path):
    proc, _ = run_bench("amp", "--repeats", "1", infra={"model": {"hidden": "wide"}}, artifacts=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "OPTSEQ_INFRA model.hidden: expected a positive integer, got 'wide'"
