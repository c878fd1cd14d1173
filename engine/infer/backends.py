"""Inference backends behind one interface: eager, torch.compile, CUDA graph, TensorRT.

`make_backend(name, model, example_batch)` builds one; calling it maps a batch to outputs.
A backend that cannot run here raises `BackendUnavailable` with the reason, never a fallback.
"""
from __future__ import annotations

import time

import torch
from torch import nn

from optseq.engine.infer.backend import BACKENDS, Backend, BackendUnavailable


def make_backend(name: str, model: nn.Module, example_batch: torch.Tensor) -> Backend:
    """Build backend `name` for `model` (put in eval mode) on inputs shaped like `example_batch`."""
    if name not in BACKENDS:
        raise ValueError(f"infer backend {name!r}: not one of {', '.join(BACKENDS)}")
    model.eval()
    start = time.perf_counter()
    if name == "eager":
        backend = Backend("eager", model)
    elif name == "compile":
        backend = _compiled(model, example_batch)
    elif name == "cudagraph":
        backend = _cuda_graph(model, example_batch)
    else:
        from optseq.engine.infer.tensorrt import tensorrt_backend

        backend = tensorrt_backend(model, example_batch)
    backend.build_s = time.perf_counter() - start
    return backend


def _compiled(model: nn.Module, example: torch.Tensor) -> Backend:
    compiled = torch.compile(model)
    backend = Backend("compile", compiled)
    backend(example)  # compile now, so build_s holds the compile time and calls are warm
    return backend


def _cuda_graph(model: nn.Module, example: torch.Tensor) -> Backend:
    if not torch.cuda.is_available():
        raise BackendUnavailable(f"cudagraph needs CUDA: torch {torch.__version__} sees no CUDA device")
    if example.device.type != "cuda":
        raise BackendUnavailable(f"cudagraph needs CUDA tensors: the example batch is on {example.device}")
    static_in = example.clone()
    with torch.inference_mode():
        # Capture must follow warm-up on a side stream so lazy init (cuBLAS handles) is not recorded.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = model(static_in)

    def replay(x: torch.Tensor) -> torch.Tensor:
        if x.shape != static_in.shape:
            raise ValueError(f"cudagraph: captured for input shape {tuple(static_in.shape)}, got {tuple(x.shape)}")
        static_in.copy_(x)
        graph.replay()
        # The graph rewrites static_out on the next replay; hand the caller its own copy.
        return static_out.clone()

    return Backend("cudagraph", replay)
