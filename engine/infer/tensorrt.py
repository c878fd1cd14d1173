"""TensorRT inference: ONNX export, then the TensorRT builder, runtime and execution context.

The engine is built for batches of 1 up to the example batch's size (one optimization profile).
Without CUDA or the `tensorrt` package it raises BackendUnavailable naming what is missing.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch import nn

from optseq.engine.infer.backend import Backend, BackendUnavailable
from optseq.engine.infer.onnx_check import INPUT, OUTPUT, export_onnx

WORKSPACE_BYTES = 1 << 30


def missing() -> str | None:
    """Why TensorRT cannot run here (every missing piece), or None when it can."""
    reasons = []
    if not torch.cuda.is_available():
        reasons.append(f"no CUDA device (torch {torch.__version__})")
    try:
        import tensorrt  # noqa: F401
    except ImportError as exc:
        reasons.append(f"tensorrt not importable ({exc})")
    if not reasons:
        return None
    return "TensorRT needs CUDA and the tensorrt package: " + "; ".join(reasons)


def tensorrt_backend(model: nn.Module, example_batch: torch.Tensor) -> Backend:
    reason = missing()
    if reason:
        raise BackendUnavailable(reason)
    if example_batch.device.type != "cuda":
        raise BackendUnavailable(f"TensorRT needs CUDA tensors: the example batch is on {example_batch.device}")
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    with tempfile.TemporaryDirectory(prefix="optseq-trt-") as tmp:
        onnx_path = export_onnx(model, example_batch, Path(tmp) / "model.onnx")
        serialized = _build(trt, logger, onnx_path.read_bytes(), tuple(example_batch.shape))
    return Backend("tensorrt", _Engine(trt, logger, serialized, example_batch))


class _Engine:
    """A deserialized engine and its execution context; holds the runtime so neither is freed early."""

    def __init__(self, trt, logger, serialized: bytes, example_batch: torch.Tensor):
        self.runtime = trt.Runtime(logger)
        self.engine = self.runtime.deserialize_cuda_engine(serialized)
        if self.engine is None:
            raise RuntimeError("tensorrt: deserialize_cuda_engine returned no engine")
        self.context = self.engine.create_execution_context()
        self.out_features = tuple(self.engine.get_tensor_shape(OUTPUT))[1:]
        self.max_shape = tuple(example_batch.shape)
        self.device = example_batch.device

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > self.max_shape[0] or tuple(x.shape[1:]) != self.max_shape[1:]:
            raise ValueError(f"tensorrt: engine built for up to {self.max_shape}, got {tuple(x.shape)}")
        x = x.to(self.device, torch.float32).contiguous()
        out = torch.empty((x.shape[0], *self.out_features), device=self.device, dtype=torch.float32)
        self.context.set_input_shape(INPUT, tuple(x.shape))
        self.context.set_tensor_address(INPUT, x.data_ptr())
        self.context.set_tensor_address(OUTPUT, out.data_ptr())
        # Enqueue on torch's current stream so the result is ordered with torch's own work.
        if not self.context.execute_async_v3(torch.cuda.current_stream(self.device).cuda_stream):
            raise RuntimeError("tensorrt: execute_async_v3 failed")
        return out


def _build(trt, logger, onnx_bytes: bytes, shape: tuple[int, ...]) -> bytes:
    builder = trt.Builder(logger)
    major = int(trt.__version__.split(".")[0])
    # TensorRT 10 is always explicit-batch and deprecates the flag; 8.x requires it for ONNX.
    flags = 0 if major >= 10 else 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(onnx_bytes):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise RuntimeError(f"tensorrt: ONNX parse failed: {errors}")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
    profile = builder.create_optimization_profile()
    features = shape[1:]
    profile.set_shape(INPUT, (1, *features), shape, shape)
    config.add_optimization_profile(profile)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError("tensorrt: build_serialized_network failed (see the TensorRT log above)")
    return bytes(serialized)
