"""Reservoir memories: a fixed-size uniform sample of every training row ever offered (Deep CFR's buffers)."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch


class ReservoirMemory:
    """Rows of (info tensor, target, weight); once full, the n-th row offered is kept with probability capacity/n."""

    def __init__(self, capacity: int, info_dim: int, target_dim: int, seed: int = 0):
        if capacity < 1:
            raise ValueError(f"ReservoirMemory: capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.info = np.zeros((capacity, info_dim), dtype=np.float32)
        self.target = np.zeros((capacity, target_dim), dtype=np.float32)
        self.weight = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self.seen = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.size

    def extend(self, rows: Iterable[Sequence]) -> None:
        """Offer rows of (info, target, weight), e.g. traversal Samples."""
        rows = list(rows)
        if not rows:
            return
        info = np.array([r[0] for r in rows], dtype=np.float32)
        target = np.array([r[1] for r in rows], dtype=np.float32)
        weight = np.array([r[2] for r in rows], dtype=np.float32)
        n = len(rows)
        fill = min(n, self.capacity - self.size)
        if fill:
            end = self.size + fill
            self.info[self.size:end], self.target[self.size:end], self.weight[self.size:end] = (
                info[:fill], target[:fill], weight[:fill])
            self.size = end
        if fill < n:
            # Row i (0-based count of all rows seen) replaces a uniform slot in [0, i] when that slot exists.
            seen = self.seen + np.arange(fill, n)
            slots = np.floor(self.rng.random(n - fill) * (seen + 1)).astype(np.int64)
            keep = np.nonzero(slots < self.capacity)[0]
            # When two new rows land on one slot the later one must win, as in the one-at-a-time algorithm.
            _, last = np.unique(slots[keep][::-1], return_index=True)
            chosen = keep[::-1][last]
            src = fill + chosen
            self.info[slots[chosen]], self.target[slots[chosen]], self.weight[slots[chosen]] = (
                info[src], target[src], weight[src])
        self.seen += n

    def sample(self, batch_size: int, rng: np.random.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A batch drawn uniformly with replacement (from `rng`, else the memory's own): float32 tensors."""
        if self.size == 0:
            raise ValueError("ReservoirMemory.sample: the memory is empty")
        idx = (rng or self.rng).integers(0, self.size, batch_size)
        return (torch.from_numpy(self.info[idx]), torch.from_numpy(self.target[idx]),
                torch.from_numpy(self.weight[idx]))
