"""No built-in A/B bench runs one arm first in every pair: each one's samples say which arm ran first."""
import pytest

from optseq.engine.bots import backend
from tests.engine.bench_child import run_bench

pytestmark = pytest.mark.slow  # real benches of the engine

# every A/B lever of the reference workload (model_size is a choice among configs, run in shuffled blocks)
AB_BENCHES = ("cython_bot", "option_b", "option_a", "amp", "compile", "tensorrt")


@pytest.mark.parametrize("lever", AB_BENCHES)
def test_half_the_pairs_run_the_baseline_first(lever, tmp_path):
    if lever == "cython_bot" and backend.native_status() is not None:
        pytest.skip(backend.native_status())
    proc, run = run_bench(lever, "--repeats", "4", "--warmup", "0", artifacts=tmp_path)  # not into the repo
    assert proc.returncode == 0, proc.stderr
    if run.unavailable is not None:
        pytest.skip(f"{lever} is unavailable here: {run.unavailable}")
    metrics = {s["metric"] for s in run.samples}
    assert metrics, f"{lever} reported no samples"
    for metric in metrics:
        firsts = {(s["pair"], s["arm"]): s["first"] for s in run.samples if s["metric"] == metric}
        pairs = sorted({pair for pair, _ in firsts})
        assert len(pairs) == 4, (lever, metric, firsts)
        for pair in pairs:  # exactly one arm of every pair ran first
            assert firsts[(pair, "baseline")] != firsts[(pair, "candidate")], (lever, metric, pair)
        baseline_first = sum(firsts[(pair, "baseline")] for pair in pairs)
        assert baseline_first == 2, f"{lever} {metric}: the baseline ran first in {baseline_first} of 4 pairs"
