"""What every inference backend is: a built callable with its build time, and the error for one that cannot run here."""
from __future__ import annotations

from typing import Callable

import torch

BACKENDS = ("eager", "compile", "cudagraph", "tensorrt")


class BackendUnavailable(Exception):
    """This backend cannot run on this machine (no CUDA, package missing); str() is the reason."""


class Backend:
    """A built inference path: `backend(x)` returns the model's outputs for batch `x`."""

    name: str
    """One of BACKENDS."""
    build_s: float
    """Seconds spent building (compilation, graph capture, engine build), first call included."""

    def __init__(self, name: str, fn: Callable[[torch.Tensor], torch.Tensor], build_s: float = 0.0):
        self.name = name
        self._fn = fn
        self.build_s = build_s

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return self._fn(x)
