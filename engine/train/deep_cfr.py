"""Deep CFR trainer: external-sampling traversals fill reservoir memories, nets regress on them.

One advantage net serves both players (the player is one-hot in the info tensor), so each driver step
is a single forward. Each iteration: traversals for both players, then the advantage net is retrained
from fresh weights on all regrets so far, weighted by iteration (linear CFR). The average policy is a
strategy net fitted to the opponents' regret-matched strategies, as in Brown et al. (2019).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from optseq.engine.games.api import Game, State
from optseq.engine.nets.mlp import MLP, MLPConfig
from optseq.engine.train.memory import ReservoirMemory
from optseq.engine.train.toggles import Stepper, Toggles
from optseq.engine.traversal import option_a, option_b, sequential
from optseq.engine.traversal.generator import TraversalResult, jobs_for
from optseq.engine.traversal.sequential import Net

TRAVERSAL_MODES = ("sequential", "option_b", "option_a", "a+b")


@dataclass(frozen=True)
class DeepCFRConfig:
    iterations: int = 20
    """Iterations a full run() performs."""
    traversals: int = 200
    """Traversals per player per iteration."""
    hidden: int = 64
    """Hidden width of the advantage and strategy nets."""
    layers: int = 3
    """Hidden layers of both nets."""
    batch_size: int = 256
    train_steps: int = 200
    """Advantage-net optimiser steps per iteration."""
    policy_train_steps: int = 1000
    """Strategy-net optimiser steps when average_policy() is built."""
    lr: float = 1e-3
    memory_size: int = 200_000
    """Rows kept by each reservoir memory."""
    seed: int = 0
    traversal: str = "option_b"
    """How traversals query the net: "sequential" | "option_b" | "option_a" | "a+b"."""
    k: int = 64
    """Traversals interleaved per worker (option_b, a+b)."""
    workers: int = 4
    """Worker threads feeding the inference server (option_a, a+b)."""
    deadline_s: float = 0.002
    """Longest the inference server holds a request waiting for company (option_a, a+b)."""
    reinit_advantage: bool = True
    """Retrain the advantage net from fresh weights each iteration (Deep CFR); else keep training it."""

    def __post_init__(self) -> None:
        if self.traversal not in TRAVERSAL_MODES:
            raise ValueError(f"DeepCFRConfig.traversal: {self.traversal!r} is not one of {', '.join(TRAVERSAL_MODES)}")
        for name in ("iterations", "traversals", "hidden", "layers", "batch_size", "memory_size", "k", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"DeepCFRConfig.{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("train_steps", "policy_train_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"DeepCFRConfig.{name}: must not be negative, got {getattr(self, name)}")


Policy = Callable[[State], list[float]]


class DeepCFRTrainer:
    def __init__(self, game: Game, config: DeepCFRConfig = DeepCFRConfig(), toggles: Toggles = Toggles()):
        self.game = game
        self.config = config
        self.toggles = toggles
        self.iteration = 0
        self.net_config = MLPConfig(game.info_state_size, config.hidden, config.layers, game.num_actions)
        self.advantage = self._stepper(salt=0)
        dims = (game.info_state_size, game.num_actions)
        self.advantage_memory = ReservoirMemory(config.memory_size, *dims, seed=config.seed)
        self.strategy_memory = ReservoirMemory(config.memory_size, *dims, seed=config.seed + 1)
        self.server_stats = option_a.ServerStats()
        """Batch sizes and latencies of the inference server, when traversal is option_a or a+b."""

    def _stepper(self, salt: int) -> Stepper:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.config.seed * 1000 + salt)
            model = MLP(self.net_config)
        return Stepper(model, self.toggles, self.config.lr)

    def advantage_net(self) -> Net:
        """The current advantage net as the drivers' callable (CPU rows in, CPU float32 out)."""
        return self._as_net(self.advantage)

    def _as_net(self, stepper: Stepper) -> Net:
        model, toggles = stepper.model, self.toggles

        def net(x: torch.Tensor) -> torch.Tensor:
            with toggles.autocast():
                return model(x.to(toggles.device)).float().cpu()

        return net

    def traverse(self, jobs) -> list[TraversalResult]:
        cfg, net = self.config, self.advantage_net()
        if cfg.traversal == "sequential":
            return sequential.run(self.game, net, jobs)
        if cfg.traversal == "option_b":
            return option_b.run(self.game, net, jobs, k=cfg.k)
        k = 1 if cfg.traversal == "option_a" else cfg.k
        return option_a.run(self.game, net, jobs, workers=cfg.workers, k=k, deadline_s=cfg.deadline_s,
                            stats=self.server_stats)

    def run_iteration(self) -> dict:
        cfg = self.config
        self.iteration += 1
        t = self.iteration
        start = time.perf_counter()
        jobs = [job for p in range(self.game.num_players) for job in jobs_for(cfg.seed, t, p, cfg.traversals)]
        results = self.traverse(jobs)
        advantage = [s for r in results for s in r.advantage]
        strategy = [s for r in results for s in r.strategy]
        self.advantage_memory.extend(advantage)
        self.strategy_memory.extend(strategy)
        traversed = time.perf_counter()
        if cfg.reinit_advantage:
            self.advantage.reset(cfg.seed * 1000 + t)
        loss = self._fit(self.advantage, self.advantage_memory, cfg.train_steps)
        trained = time.perf_counter()
        return {
            "iteration": t,
            "samples": len(advantage),
            "strategy_samples": len(strategy),
            "queries": sum(r.queries for r in results),
            "traverse_s": traversed - start,
            "train_s": trained - traversed,
            "loss": loss,
        }

    def run(self) -> list[dict]:
        return [self.run_iteration() for _ in range(self.config.iterations)]

    def _fit(self, stepper: Stepper, memory: ReservoirMemory, steps: int,
             rng: np.random.Generator | None = None) -> float:
        """Mean loss of the last tenth of the steps (NaN when there is nothing to fit)."""
        if len(memory) == 0 or steps == 0:
            return float("nan")
        losses = []
        # Weights are iteration numbers; scaling by the current one keeps the loss scale steady.
        scale = 1.0 / max(self.iteration, 1)
        for _ in range(steps):
            x, y, w = memory.sample(self.config.batch_size, rng)
            losses.append(stepper.step(x, y, w * scale))
        tail = losses[-max(1, steps // 10):]
        return sum(tail) / len(tail)

    def average_policy(self) -> Policy:
        """Fit a strategy net to the strategy memory; return state -> probabilities over all actions."""
        stepper = self._stepper(salt=999)
        # Its own batch RNG: evaluating mid-run must not change the rest of the run.
        rng = np.random.default_rng([self.config.seed, self.iteration])
        self._fit(stepper, self.strategy_memory, self.config.policy_train_steps, rng)
        net = self._as_net(stepper)
        num_actions = self.game.num_actions

        def policy(state: State) -> list[float]:
            legal = state.legal_actions()
            out = sequential.forward_rows(net, [state.info_state_tensor(state.current_player())])[0]
            probs = [0.0] * num_actions
            for a in legal:
                probs[a] = max(out[a], 0.0)
            total = sum(probs)
            if total <= 0.0:
                return [1.0 / len(legal) if a in legal else 0.0 for a in range(num_actions)]
            return [p / total for p in probs]

        return policy

