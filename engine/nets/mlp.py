"""MLP with skip connections and LayerNorm before the head. Model only: no training code."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class MLPConfig:
    input_dim: int
    """Width of the information-state tensor."""
    hidden: int = 64
    """Width of every hidden layer."""
    layers: int = 3
    """Number of hidden layers (each after the first has a skip connection)."""
    actions: int = 3
    """Output width: one advantage / logit per action."""


class MLP(nn.Module):
    def __init__(self, config: MLPConfig):
        super().__init__()
        self.config = config
        self.inp = nn.Linear(config.input_dim, config.hidden)
        self.hidden = nn.ModuleList(nn.Linear(config.hidden, config.hidden) for _ in range(config.layers - 1))
        self.norm = nn.LayerNorm(config.hidden)
        self.head = nn.Linear(config.hidden, config.actions)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        for layer in self.hidden:
            h = h + torch.relu(layer(h))
        return self.head(self.norm(h))
