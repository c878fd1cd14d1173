"""Model-size experiment: Deep CFR on Leduc at four network sizes, on the current stack.

Per config (arm = its name, e.g. "h1024x6"): seconds per iteration (one sample per iteration) and
exact exploitability of the average policy after training. The trainers take turns, one iteration
each, so machine drift spreads over every config alike.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from engine.bench import protocol
from engine.bench.envinfo import pick_device
from engine.eval.exploitability import exploitability
from engine.games.leduc import LeducGame
from engine.train.deep_cfr import DeepCFRConfig, DeepCFRTrainer
from engine.train.toggles import Toggles


@dataclass(frozen=True)
class Plan:
    """The configs (hidden, layers) and the per-config Deep CFR budget of one bench size."""

    configs: tuple[tuple[int, int], ...]
    iterations: int
    traversals: int
    train_steps: int
    policy_train_steps: int
    batch_size: int


PLANS = {
    # Tiny: shows the pipeline end to end on 2 cores in well under a minute, not a converged policy.
    "ci": Plan(((16, 2), (32, 2), (64, 3), (128, 3)), iterations=3, traversals=30, train_steps=30,
               policy_train_steps=100, batch_size=128),
    # The seed's experiment: 4 configs x 200 iterations, the largest at hidden >= 1024, layers >= 6.
    "gpu": Plan(((256, 3), (512, 4), (1024, 6), (2048, 8)), iterations=200, traversals=200, train_steps=200,
                policy_train_steps=2000, batch_size=1024),
}
SEED = 0


def config_name(hidden: int, layers: int) -> str:
    return f"h{hidden}x{layers}"


def traversal_mode(infra: protocol.Infra) -> str:
    """The traversal the current stack uses: Option A and/or B once adopted, else sequential."""
    a, b = infra.has("option_a"), infra.has("option_b")
    return "a+b" if a and b else "option_a" if a else "option_b" if b else "sequential"


def run(args, infra: protocol.Infra) -> None:
    plan = PLANS[args.size]
    iterations = plan.iterations if args.repeats is None else args.repeats
    if iterations < 1:
        raise SystemExit(f"--repeats {iterations}: model_size needs at least one iteration per config")
    device = pick_device(args.device)
    toggles = Toggles.from_infra(infra, device)
    traversal = traversal_mode(infra)
    game = LeducGame()
    trainers = {
        config_name(h, l): DeepCFRTrainer(game, DeepCFRConfig(
            iterations=iterations, traversals=plan.traversals, hidden=h, layers=l,
            batch_size=plan.batch_size, train_steps=plan.train_steps,
            policy_train_steps=plan.policy_train_steps, seed=SEED, traversal=traversal), toggles)
        for h, l in plan.configs
    }
    print(f"model_size: {', '.join(trainers)}; {iterations} iterations each, traversal {traversal}, {toggles}",
          flush=True)
    total = len(trainers) * (iterations + 1)
    done = 0
    for i in range(iterations):
        for name, trainer in trainers.items():
            start = time.perf_counter()
            stats = trainer.run_iteration()
            protocol.sample(name, "s_per_iter", time.perf_counter() - start, "s", False, i)
            done += 1
            protocol.progress(done, total, f"{name} iteration {i + 1}/{iterations} loss {stats['loss']:.4g}")
    for name, trainer in trainers.items():
        start = time.perf_counter()
        value = exploitability(game, trainer.average_policy())
        protocol.sample(name, "exploitability", value, "chips/hand", False, 0)
        done += 1
        protocol.progress(done, total, f"{name} exploitability {value:.4f} ({time.perf_counter() - start:.1f} s)")
