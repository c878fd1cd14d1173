"""The training toggles (AMP, torch.compile) as one dataclass, applied in one place, and the Stepper that uses them."""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch
from torch import nn

AMP_MODES = ("off", "bf16", "fp16")
_AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Toggles:
    """One value per lever; every training and benchmark path reads them from here."""

    amp: str = "off"
    """Autocast dtype: "off" (fp32), "bf16", or "fp16" (fp16 also turns the GradScaler on)."""
    compile: bool = False
    """Wrap the model in torch.compile."""
    device: str = "cpu"
    """torch device the model and batches live on."""

    def __post_init__(self) -> None:
        if self.amp not in AMP_MODES:
            raise ValueError(f"Toggles.amp: {self.amp!r} is not one of {', '.join(AMP_MODES)}")

    @classmethod
    def from_infra(cls, infra, device: str = "cpu") -> "Toggles":
        """The current stack: AMP and compile are on exactly when their levers are adopted.

        The AMP dtype is `infra.model["amp_dtype"]` when given, else bf16 where the device supports it
        (every CPU, Ampere+ GPUs) and fp16 elsewhere.
        """
        amp = "off"
        if "amp" in infra.adopted:
            amp = (infra.model or {}).get("amp_dtype") or default_amp_dtype(device)
        return cls(amp=amp, compile="compile" in infra.adopted, device=device)

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype, None when AMP is off."""
        return _AMP_DTYPES.get(self.amp)

    def autocast(self) -> AbstractContextManager:
        """The forward-pass context: autocast in the chosen dtype, or nothing."""
        if self.amp == "off":
            return nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler:
        # fp16 gradients underflow without loss scaling; bf16 has fp32's range and needs none.
        return torch.amp.GradScaler(self.device_type, enabled=self.amp == "fp16")

    def prepare(self, model: nn.Module) -> nn.Module:
        """Move to the device and compile if asked; returns the module to call (which shares parameters)."""
        model = model.to(self.device)
        if self.compile:
            return torch.compile(model)
        return model


def default_amp_dtype(device: str) -> str:
    if torch.device(device).type == "cuda" and not torch.cuda.is_bf16_supported():
        return "fp16"
    return "bf16"


class Stepper:
    """One optimiser step of weighted MSE (Deep CFR's loss) under the toggles.

    `model` is the callable the toggles produced (compiled or eager); `module` is the plain nn.Module
    that owns the parameters (save, load and copy weights through it).
    """

    def __init__(self, model: nn.Module, toggles: Toggles, lr: float = 1e-3, *, clip_grad: float | None = 1.0):
        self.toggles = toggles
        self.module = model.to(toggles.device)
        self.model = toggles.prepare(self.module)
        self.optimizer = torch.optim.Adam(self.module.parameters(), lr=lr)
        self.scaler = toggles.grad_scaler()
        self.clip_grad = clip_grad

    def reset(self, seed: int) -> None:
        """Fresh weights (from `seed`) and optimiser state, keeping the compiled graph."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for module in self.module.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
        self.optimizer.state.clear()

    def loss(self, x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """mean over the batch of weight * squared error summed over actions."""
        with self.toggles.autocast():
            out = self.model(x)
        err = (out.float() - target).pow(2).sum(dim=-1)
        return (weight * err).mean()

    def step(self, x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> float:
        device = self.toggles.device
        x, target, weight = x.to(device), target.to(device), weight.to(device)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(x, target, weight)
        self.scaler.scale(loss).backward()
        if self.clip_grad is not None:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.module.parameters(), self.clip_grad)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return float(loss.detach())
