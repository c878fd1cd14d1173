"""`python -m optseq.engine.bench option_b` speaks the run protocol end to end."""
import pytest

from tests.engine.bench_child import events, run_bench

pytestmark = pytest.mark.slow  # real benches of the engine


def test_option_b_bench_emits_paired_samples_and_the_parity_guard():
    proc, run = run_bench("option_b", "--repeats", "2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    assert evs[0]["event"] == "env" and evs[-1]["event"] == "done"
    (guard,) = run.quality
    assert guard["name"] == "sample_mismatches" and guard["value"] == 0 and guard["limit"] == 0
    # counterbalanced: the candidate runs first in the second pair
    assert [(s["pair"], s["arm"]) for s in run.samples] == [(0, "baseline"), (0, "candidate"),
                                                            (1, "candidate"), (1, "baseline")]
    for s in run.samples:
        assert s["metric"] == "advantage_samples_per_s" and s["higher_is_better"] is True and s["value"] > 0
    assert [e["done"] for e in evs if e["event"] == "progress"] == [1, 2]
    assert any("median candidate/baseline ratio" in line for line in run.log)


def test_option_b_bench_uses_the_model_from_infra():
    proc, run = run_bench("option_b", "--repeats", "1", "--warmup", "0",
                          infra={"adopted": ["option_b"], "model": {"hidden": 16, "layers": 2}})
    assert proc.returncode == 0, proc.stderr
    assert any("option_b K=64 vs option_b" in line for line in run.log)


@pytest.mark.parametrize("model", [{"hidden": "wide"}, {"layers": 0}])
def test_bad_model_in_infra_is_a_one_line_error(model):
    proc, _ = run_bench("option_b", "--repeats", "1", infra={"adopted": [], "model": model})
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("OPTSEQ_INFRA: model.")
    assert len(proc.stderr.strip().splitlines()) == 1
