"""Inference backends (eager, torch.compile, CUDA graph, TensorRT) behind one interface."""
from optseq.engine.infer.backends import BACKENDS, Backend, BackendUnavailable, make_backend

__all__ = ["BACKENDS", "Backend", "BackendUnavailable", "make_backend"]
