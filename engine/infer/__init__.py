"""Inference backends (eager, torch.compile, CUDA graph, TensorRT) behind one interface."""
from optseq.engine.infer.backend import BACKENDS, Backend, BackendUnavailable
from optseq.engine.infer.backends import make_backend

__all__ = ["BACKENDS", "Backend", "BackendUnavailable", "make_backend"]
