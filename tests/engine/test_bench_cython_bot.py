"""`python -m optseq.engine.bench cython_bot` as optseq runs it: a real child process speaking the protocol."""
import pytest

from optseq.engine.bots import backend
from tests.engine.bench_child import events, run_bench

pytestmark = pytest.mark.slow  # real benches of the engine


@pytest.mark.skipif(backend.native_status() is not None, reason=f"{backend.native_status()}")
def test_paired_samples_and_parity_guards():
    proc, run = run_bench("cython_bot", "--repeats", "2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    kinds = [e["event"] for e in evs]
    assert kinds[0] == "env" and kinds[-1] == "done" and run.unavailable is None
    assert evs[0]["bot_backend"] == "cython"
    assert [(s["arm"], s["pair"]) for s in run.samples] == [
        ("baseline", 0), ("candidate", 0), ("candidate", 1), ("baseline", 1)]  # counterbalanced: A B B A
    assert all(s["metric"] == "opponent_act_calls_per_s" and s["higher_is_better"] and s["value"] > 0
               for s in run.samples)
    quality = {q["name"]: q for q in run.quality}
    assert quality["action_mismatches"]["value"] == 0 and quality["action_mismatches"]["limit"] == 0
    assert quality["equity_max_abs_diff"]["value"] == 0
    assert [e["done"] for e in evs if e["event"] == "progress"] == [1, 2]


def test_without_the_native_twin_the_run_is_unavailable():
    proc, run = run_bench("cython_bot", "--repeats", "2", "--warmup", "0", env={"OPTSEQ_PUREPYTHON": "1"})
    assert proc.returncode == 0, proc.stderr
    assert [e["event"] for e in events(proc.stdout)] == ["env", "unavailable", "done"]
    assert "OPTSEQ_PUREPYTHON" in run.unavailable


@pytest.mark.skipif(backend.native_status() is not None,
                    reason=f"{backend.native_status()}: the run stops as unavailable first")
def test_bad_repeat_count_is_one_line_error():
    proc, run = run_bench("cython_bot", "--repeats", "0")
    assert proc.returncode != 0
    assert "--repeats" in proc.stderr and "Traceback" not in proc.stderr
    assert not run.done
