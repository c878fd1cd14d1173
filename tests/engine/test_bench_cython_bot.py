"""`python -m engine.bench cython_bot` as optseq runs it: a real child process speaking the protocol."""
import json
import os
import subprocess
import sys

import pytest

from engine.bots import backend

ARGV = [sys.executable, "-m", "engine.bench", "cython_bot"]


def run_bench(*args, **env):
    proc = subprocess.run([*ARGV, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env})
    events = []
    for line in proc.stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
    return proc, events


@pytest.mark.skipif(backend.native_status() is not None, reason=f"{backend.native_status()}")
def test_paired_samples_and_parity_guards():
    proc, events = run_bench("--repeats", "2", "--warmup", "0", OPTSEQ_PUREPYTHON="")
    assert proc.returncode == 0, proc.stderr
    kinds = [e["event"] for e in events]
    assert kinds[0] == "env" and kinds[-1] == "done" and "unavailable" not in kinds
    assert events[0]["bot_backend"] == "cython"
    samples = [e for e in events if e["event"] == "sample"]
    assert [(s["arm"], s["pair"]) for s in samples] == [
        ("baseline", 0), ("candidate", 0), ("baseline", 1), ("candidate", 1)]
    assert all(s["metric"] == "opponent_act_calls_per_s" and s["higher_is_better"] and s["value"] > 0
               for s in samples)
    quality = {e["name"]: e for e in events if e["event"] == "quality"}
    assert quality["action_mismatches"]["value"] == 0 and quality["action_mismatches"]["limit"] == 0
    assert quality["equity_max_abs_diff"]["value"] == 0
    assert [e["done"] for e in events if e["event"] == "progress"] == [1, 2]


def test_without_the_native_twin_the_run_is_unavailable():
    proc, events = run_bench("--repeats", "2", "--warmup", "0", OPTSEQ_PUREPYTHON="1")
    assert proc.returncode == 0, proc.stderr
    assert [e["event"] for e in events] == ["env", "unavailable", "done"]
    assert "OPTSEQ_PUREPYTHON" in events[1]["reason"]


@pytest.mark.skipif(backend.native_status() is not None,
                    reason=f"{backend.native_status()}: the run stops as unavailable first")
def test_bad_repeat_count_is_one_line_error():
    proc, events = run_bench("--repeats", "0", OPTSEQ_PUREPYTHON="")
    assert proc.returncode != 0
    assert "--repeats" in proc.stderr and "Traceback" not in proc.stderr
    assert "done" not in [e["event"] for e in events]
