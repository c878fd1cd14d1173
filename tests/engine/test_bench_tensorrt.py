"""The TensorRT bench: checks the ONNX export everywhere, measures only where TensorRT and CUDA exist."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.bench.report import parse_lines
from engine.infer import tensorrt as trt_backend
from engine.infer.onnx_check import onnxruntime_missing


def bench(tmp_path, *argv):
    env = dict(os.environ, OPTSEQ_ARTIFACTS=str(tmp_path))
    env.pop("OPTSEQ_INFRA", None)
    proc = subprocess.run([sys.executable, "-m", "engine.bench", *argv], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=300)
    return proc, parse_lines(argv[0], proc.stdout.splitlines())


@pytest.mark.skipif(trt_backend.missing() is None, reason="TensorRT and CUDA present: the bench measures instead")
def test_tensorrt_reports_unavailable_and_still_succeeds(tmp_path):
    proc, run = bench(tmp_path, "tensorrt", "--repeats", "2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == '{"event": "done"}'
    assert run.done and run.status == "unavailable"
    assert run.unavailable == trt_backend.missing()
    assert "tensorrt" in run.unavailable.lower()
    assert run.samples == []


@pytest.mark.skipif(onnxruntime_missing() is not None, reason="onnxruntime not installed")
def test_tensorrt_bench_checks_the_onnx_export_first(tmp_path):
    proc, run = bench(tmp_path, "tensorrt", "--repeats", "2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    guards = {q["name"]: q for q in run.quality}
    onnx = guards["onnx_max_abs_error"]
    assert 0 <= onnx["value"] <= onnx["limit"]
    assert (tmp_path / "model.onnx").stat().st_size > 0
