"""Inference backends: the fast paths agree with eager, and the CUDA-only ones say why they cannot run."""
from __future__ import annotations

import pytest
import torch

from optseq.engine.infer import BACKENDS, BackendUnavailable, make_backend
from optseq.engine.infer import tensorrt as trt_backend
from optseq.engine.infer.onnx_check import max_abs_error, onnxruntime_missing
from optseq.engine.nets.mlp import MLP, MLPConfig

INPUT_DIM = 30


@pytest.fixture
def model_and_batch():
    # Fixed seed: the bounds below are about numerics, not about a lucky draw of weights.
    torch.manual_seed(0)
    model = MLP(MLPConfig(input_dim=INPUT_DIM, hidden=32, layers=3, actions=3))
    batch = torch.randn(16, INPUT_DIM)
    return model, batch


def test_eager_is_the_model(model_and_batch):
    model, batch = model_and_batch
    backend = make_backend("eager", model, batch)
    assert backend.name == "eager"
    assert torch.equal(backend(batch), model(batch).detach())


@pytest.mark.slow  # torch.compile
def test_compile_agrees_with_eager(model_and_batch):
    model, batch = model_and_batch
    eager = make_backend("eager", model, batch)
    compiled = make_backend("compile", model, batch)
    assert compiled.name == "compile"
    assert compiled.build_s > 0
    other = torch.randn(16, INPUT_DIM) * 3
    for x in (batch, other):
        assert torch.allclose(compiled(x), eager(x), atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(onnxruntime_missing() is not None, reason="onnxruntime not installed")
def test_onnx_export_matches_eager_on_onnxruntime(model_and_batch, tmp_path):
    model, batch = model_and_batch
    error = max_abs_error(model, batch, tmp_path / "mlp.onnx")
    assert (tmp_path / "mlp.onnx").stat().st_size > 0
    assert error < 1e-5


@pytest.mark.skipif(onnxruntime_missing() is not None, reason="onnxruntime not installed")
def test_onnx_export_has_a_dynamic_batch_and_the_exported_weights(model_and_batch, tmp_path):
    import onnxruntime as ort

    from optseq.engine.infer.onnx_check import INPUT, OUTPUT, export_onnx

    model, batch = model_and_batch
    path = export_onnx(model, batch, tmp_path / "mlp.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    small = batch[:5]
    (got,) = session.run([OUTPUT], {INPUT: small.numpy()})
    with torch.no_grad():
        assert torch.allclose(torch.from_numpy(got), model(small), atol=1e-5)
        model.head.bias.add_(1.0)  # the file keeps the weights it was exported with
        assert (torch.from_numpy(got) - model(small)).abs().min() > 0.5


def test_unknown_backend_is_named(model_and_batch):
    model, batch = model_and_batch
    with pytest.raises(ValueError, match="'tpu'.*eager"):
        make_backend("tpu", model, batch)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_cudagraph_reports_missing_cuda(model_and_batch):
    model, batch = model_and_batch
    with pytest.raises(BackendUnavailable, match="CUDA"):
        make_backend("cudagraph", model, batch)


def test_tensorrt_reports_what_is_missing(model_and_batch):
    model, batch = model_and_batch
    reason = trt_backend.missing()
    if reason is None:
        pytest.skip("TensorRT and CUDA are both present: the unavailable path does not apply")
    with pytest.raises(BackendUnavailable) as info:
        make_backend("tensorrt", model, batch)
    text = str(info.value)
    assert text == reason
    if not torch.cuda.is_available():
        assert "CUDA" in text
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        assert "tensorrt not importable" in text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", [n for n in BACKENDS if n != "eager"])
def test_cuda_backends_agree_with_eager(name, model_and_batch):
    model, batch = model_and_batch
    model, batch = model.cuda(), batch.cuda()
    try:
        backend = make_backend(name, model, batch)
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    eager = make_backend("eager", model, batch)
    assert torch.allclose(backend(batch), eager(batch), atol=1e-3, rtol=1e-3)
