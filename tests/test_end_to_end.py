"""The default plan driven through the real CLI with real engine runs: gates, decisions, staleness."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import DEFAULT_PLAN, OPTSEQ

pytestmark = pytest.mark.slow  # real engine runs through the CLI


@pytest.fixture
def small_plan(tmp_path):
    """The default plan with a test-sized budget for amp (the engine bench itself is CI size): 5 launches of one
    pair, the fewest a sign test over launches can decide with."""
    text = DEFAULT_PLAN.read_text(encoding="utf-8")
    old = 'rule = { metric = "train_samples_per_s", min_speedup = 1.1, repeats = 7, max_repeats = 21, guards = [{ name = "loss_delta", max = 0.05 }] }'
    assert old in text, "amp's rule moved; update this fixture"
    path = tmp_path / "sequencing.toml"
    path.write_text(text.replace(old, old.replace("repeats = 7, max_repeats = 21", "repeats = 1, max_repeats = 5")),
                    encoding="utf-8")
    return path


def test_model_size_decision_makes_amp_stale_and_run_stale_remeasures(small_plan, cli_env):
    env = dict(cli_env, OPTSEQ_PLAN=str(small_plan))

    def optseq(*args, code=0):
        proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=1800)
        assert code is None or proc.returncode == code, proc.stdout + proc.stderr
        return proc

    def lever(lever_id):
        status = json.loads(optseq("status", "--json").stdout)
        return next(l for l in status["levers"] if l["id"] == lever_id), status

    optseq("record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "criterion 4 missed")
    optseq("plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    optseq("decide", "option_b", "adopt", "--why", "5.3x samples/s in docs/performance.md")
    optseq("decide", "model_size", "h64x3", "--why", "CI-size stand-in for the 200-iteration experiment", "--unmeasured")
    started = optseq("--run", "amp", "--json", code=None)
    first = json.loads(started.stdout)["runs"][0]
    assert first["status"] == "succeeded", first
    stats = first["summary"]["stats"]
    assert stats["replicate"] == "launch" and stats["n"] == stats["launches"] <= 5, stats  # a guard may end it early
    amp, _ = lever("amp")
    # five CPU launches may not settle it; a person decides with the run cited
    if amp["state"] == "measured":
        optseq("decide", "amp", "reject", "--why", f"run {first['run_id']}: inconclusive on CPU")
    amp, _ = lever("amp")
    assert amp["state"] in ("adopted", "rejected")

    optseq("decide", "model_size", "h32x2", "--why", "re-run of the experiment chose a smaller net", "--unmeasured")
    amp, status = lever("amp")
    assert amp["state"] == "stale" and amp["stale"] is True
    assert "model_size" in amp["stale_reason"]
    assert status["infra"]["model"]["name"] == "h32x2"

    again = json.loads(optseq("--run", "stale", "--json", code=None).stdout)
    assert [r["lever"] for r in again["runs"]] == ["amp"] and again["runs"][0]["status"] == "succeeded"
    amp, _ = lever("amp")
    assert amp["state"] != "stale"
    runs = json.loads(optseq("runs", "amp", "--json").stdout)["runs"]
    assert runs[-1]["infra"]["model"]["name"] == "h32x2"  # re-measured on the current stack
    assert runs[-1]["fingerprint"]["code_hash"]
