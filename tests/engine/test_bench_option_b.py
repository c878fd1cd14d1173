"""`python -m engine.bench option_b` speaks the run protocol end to end."""
import json
import os
import subprocess
import sys

import pytest


def run_bench(*argv, infra=None):
    env = {k: v for k, v in os.environ.items() if k != "OPTSEQ_INFRA"}
    if infra is not None:
        env["OPTSEQ_INFRA"] = json.dumps(infra)
    return subprocess.run([sys.executable, "-m", "engine.bench", "option_b", *argv], capture_output=True,
                          text=True, env=env, timeout=120)


def events(stdout):
    out = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            out.append(obj)
    return out


def test_option_b_bench_emits_paired_samples_and_the_parity_guard():
    proc = run_bench("--repeats", "2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    assert evs[0]["event"] == "env" and evs[-1]["event"] == "done"
    (guard,) = [e for e in evs if e["event"] == "quality"]
    assert guard["name"] == "sample_mismatches" and guard["value"] == 0 and guard["limit"] == 0
    samples = [e for e in evs if e["event"] == "sample"]
    assert [(s["pair"], s["arm"]) for s in samples] == [(0, "baseline"), (0, "candidate"),
                                                        (1, "baseline"), (1, "candidate")]
    for s in samples:
        assert s["metric"] == "advantage_samples_per_s" and s["higher_is_better"] is True and s["value"] > 0
    assert [e["done"] for e in evs if e["event"] == "progress"] == [1, 2]
    assert "median candidate/baseline ratio" in proc.stdout


def test_option_b_bench_uses_the_model_from_infra():
    proc = run_bench("--repeats", "1", "--warmup", "0", infra={"adopted": ["option_b"], "model": {"hidden": 16, "layers": 2}})
    assert proc.returncode == 0, proc.stderr
    assert "option_b K=64 vs option_b" in proc.stdout


@pytest.mark.parametrize("model", [{"hidden": "wide"}, {"layers": 0}])
def test_bad_model_in_infra_is_a_one_line_error(model):
    proc = run_bench("--repeats", "1", infra={"adopted": [], "model": model})
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("OPTSEQ_INFRA: model.")
    assert len(proc.stderr.strip().splitlines()) == 1
