"""The TensorRT bench: checks the ONNX export everywhere, measures only where TensorRT and CUDA exist."""
from __future__ import annotations

import pytest

from optseq.engine.infer import tensorrt as trt_backend
from optseq.engine.infer.onnx_check import onnxruntime_missing
from tests.engine.bench_child import run_bench

pytestmark = pytest.mark.slow  # real benches of the engine


@pytest.mark.skipif(trt_backend.missing() is None, reason="TensorRT and CUDA present: the bench measures instead")
def test_tensorrt_reports_unavailable_and_still_succeeds(tmp_path):
    proc, run = run_bench("tensorrt", "--repeats", "2", "--warmup", "0", artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == '{"event": "done"}'
    assert run.done and run.status == "unavailable"
    assert run.unavailable == trt_backend.missing()
    assert "tensorrt" in run.unavailable.lower()
    assert run.samples == []


@pytest.mark.skipif(onnxruntime_missing() is not None, reason="onnxruntime not installed")
def test_tensorrt_bench_checks_the_onnx_export_first(tmp_path):
    proc, run = run_bench("tensorrt", "--repeats", "2", "--warmup", "0", artifacts=tmp_path)
    assert proc.returncode == 0, proc.stderr
    guards = {q["name"]: q for q in run.quality}
    onnx = guards["onnx_max_abs_error"]
    assert 0 <= onnx["value"] <= onnx["limit"]
    assert (tmp_path / "model.onnx").stat().st_size > 0
