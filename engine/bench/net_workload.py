"""What the network benches (amp, compile, tensorrt) share: model size, a fixed Leduc batch, timed steps.

The batch is real: information-state tensors of every Leduc decision node, sampled with a fixed
seed; regression targets come from a fixed random teacher network so the loss can fall, and a
precision change shows up in it.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace

import torch

from optseq.engine import kit
from optseq.engine.bench.envinfo import pick_device
from optseq.engine.games.leduc import LeducGame
from optseq.engine.nets.mlp import MLP, MLPConfig
from optseq.engine.train.toggles import Stepper, Toggles


@dataclass(frozen=True)
class Size:
    """Defaults per bench size; the model's hidden/layers can be overridden by the infra state."""

    hidden: int
    layers: int
    batch: int
    """Rows per training step / inference call."""
    steps: int
    """Training steps per timed sample."""
    repeats: int
    warmup: int


SIZES = {
    "ci": Size(hidden=64, layers=3, batch=256, steps=150, repeats=5, warmup=1),
    "gpu": Size(hidden=1024, layers=6, batch=4096, steps=100, repeats=10, warmup=2),
}
SEED = 0


def model_config(size: str, infra: kit.Infra, input_dim: int = LeducGame.info_state_size) -> MLPConfig:
    """hidden and layers from OPTSEQ_INFRA's model when given (the chosen config), else the size's default."""
    defaults = SIZES[size]
    dims = {}
    for key in ("hidden", "layers"):
        value = infra.model.get(key, getattr(defaults, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SystemExit(f"OPTSEQ_INFRA model.{key}: expected a positive integer, got {value!r}")
        dims[key] = value
    return MLPConfig(input_dim=input_dim, hidden=dims["hidden"], layers=dims["layers"], actions=LeducGame.num_actions)


def repeats_and_warmup(args, size: str) -> tuple[int, int]:
    defaults = SIZES[size]
    repeats = defaults.repeats if args.repeats is None else args.repeats
    warmup = defaults.warmup if args.warmup is None else args.warmup
    if repeats < 1 or warmup < 0:
        raise SystemExit(f"--repeats {repeats} / --warmup {warmup}: need repeats >= 1 and warmup >= 0")
    return repeats, warmup


def leduc_info_states() -> torch.Tensor:
    """One row per Leduc information set where a player acts (found by walking the whole tree)."""
    game = LeducGame()
    rows: dict[str, list[float]] = {}
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance():
            stack.extend(state.apply(card) for card, _ in state.chance_outcomes())
            continue
        player = state.current_player()
        rows.setdefault(state.info_state_key(player), list(state.info_state_tensor(player)))
        stack.extend(state.apply(a) for a in state.legal_actions())
    return torch.tensor(list(rows.values()), dtype=torch.float32)


def fixed_batch(batch: int, actions: int = LeducGame.num_actions, seed: int = SEED, device: str = "cpu"):
    """(inputs, targets, weights): `batch` Leduc information states drawn with replacement.

    Weights mimic linear-CFR iteration weights (uniform on (0, 1]).
    """
    gen = torch.Generator().manual_seed(seed)
    states = leduc_info_states()
    x = states[torch.randint(len(states), (batch,), generator=gen)]
    torch.manual_seed(seed + 1)
    teacher = MLP(MLPConfig(input_dim=x.shape[1], hidden=32, layers=2, actions=actions))
    with torch.no_grad():
        target = teacher(x) * 5.0  # advantages are chip-sized, not unit-sized
    weight = 1.0 - torch.rand(batch, generator=gen)
    return x.to(device), target.to(device), weight.to(device)


def sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def train_throughput(stepper, x, target, weight, steps: int) -> float:
    """Samples per second over `steps` optimiser steps on the fixed batch."""
    device = stepper.toggles.device
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        stepper.step(x, target, weight)
    sync(device)
    return steps * x.shape[0] / (time.perf_counter() - start)


def timed_step(stepper, x, target, weight) -> float:
    """Seconds for one step outside the paired samples (the first one absorbs compilation)."""
    sync(stepper.toggles.device)
    start = time.perf_counter()
    stepper.step(x, target, weight)
    sync(stepper.toggles.device)
    return time.perf_counter() - start


def eval_loss(stepper, x, target, weight) -> float:
    """The stepper's weighted MSE on the batch in fp32, eager, without a step."""
    with torch.no_grad():
        err = (stepper.module(x).float() - target).pow(2).sum(dim=-1)
        return float((weight * err).mean())


def without(infra: kit.Infra, lever: str) -> kit.Infra:
    """The stack with `lever` taken out: a re-measurement compares without vs with, even once adopted."""
    return kit.Infra(adopted=infra.adopted - {lever}, model=infra.model)


@dataclass
class TrainerAB:
    """Two trainers from the same weights on the same batch: the stack without a lever, and with it."""

    size: "Size"
    config: MLPConfig
    repeats: int
    warmup: int
    baseline: object
    candidate: object
    x: torch.Tensor
    target: torch.Tensor
    weight: torch.Tensor

    def pair(self, label: str) -> None:
        kit.pairs(
            lambda: train_throughput(self.baseline, self.x, self.target, self.weight, self.size.steps),
            lambda: train_throughput(self.candidate, self.x, self.target, self.weight, self.size.steps),
            repeats=self.repeats, warmup=self.warmup, metric="train_samples_per_s", unit="samples/s",
            higher_is_better=True, label=label,
        )


def trainer_ab(args, infra: kit.Infra, lever: str, lr: float, **change) -> TrainerAB:
    """Baseline = the stack from OPTSEQ_INFRA minus `lever`; candidate = the same toggles with `change`."""
    device = pick_device(args.device)
    size = SIZES[args.size]
    repeats, warmup = repeats_and_warmup(args, args.size)
    config = model_config(args.size, infra)
    baseline_toggles = Toggles.from_infra(without(infra, lever), device)
    candidate_toggles = replace(baseline_toggles, **change)
    print(f"{lever}: model {config}, batch {size.batch}, {size.steps} steps per sample; "
          f"baseline {baseline_toggles}, candidate {candidate_toggles}", flush=True)
    torch.manual_seed(SEED)
    model = MLP(config)
    x, target, weight = fixed_batch(size.batch, config.actions, device=device)
    return TrainerAB(size, config, repeats, warmup, Stepper(copy.deepcopy(model), baseline_toggles, lr),
                     Stepper(copy.deepcopy(model), candidate_toggles, lr), x, target, weight)
