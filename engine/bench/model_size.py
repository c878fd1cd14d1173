"""Model-size experiment: Deep CFR on Leduc at four network sizes, on the current stack, in blocks.

A choice among N configs, measured in interleaved blocks: in each block every config (arm = its name,
e.g. "h1024x6") trains from scratch, in a random order within the block, for the size's iterations,
reporting seconds per iteration (one sample per iteration) and then the exact exploitability of its
average policy (one sample), all with `pair` = the block's index. A block is the unit the statistics
(state/runs/best_of.py) compare configs within, so drift between blocks (a busy machine, a warmer GPU)
is absorbed and does not favour whichever config ran first.

`--repeats N` (or OPTSEQ_REPEATS) is the number of blocks. Every config in a block shares the block's
seed, which derives from the block index and the pass (OPTSEQ_PASS, 1-based, set by optseq when it
extends a run), so an extension pass measures new blocks rather than replaying the first pass's.
OPTSEQ_ITERATIONS overrides the per-config iterations (gpu-check uses it to fit a lease).
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

import numpy as np

from optseq.engine import kit
from optseq.engine.bench.envinfo import pick_device
from optseq.engine.eval.exploitability import exploitability
from optseq.engine.games.leduc import LeducGame
from optseq.engine.train.deep_cfr import DeepCFRConfig, DeepCFRTrainer
from optseq.engine.train.toggles import Toggles


@dataclass(frozen=True)
class Plan:
    """The configs (hidden, layers), the blocks run by default and the per-config Deep CFR budget of one size."""

    configs: tuple[tuple[int, int], ...]
    iterations: int
    """Deep CFR iterations per config per block."""
    traversals: int
    train_steps: int
    policy_train_steps: int
    batch_size: int
    blocks: int = 2
    """Blocks when neither --repeats nor OPTSEQ_REPEATS says: two is the fewest the comparison can use."""


PLANS = {
    # Tiny: a block (every config trained once) takes a couple of seconds on 2 cores; not a converged policy.
    "ci": Plan(((16, 2), (32, 2), (64, 3), (128, 3)), iterations=3, traversals=30, train_steps=30,
               policy_train_steps=100, batch_size=128),
    # The seed's experiment: 4 configs x 200 iterations, the largest at hidden >= 1024, layers >= 6.
    "gpu": Plan(((256, 3), (512, 4), (1024, 6), (2048, 8)), iterations=200, traversals=200, train_steps=200,
                policy_train_steps=2000, batch_size=1024),
}
SEED = 0


def config_name(hidden: int, layers: int) -> str:
    return f"h{hidden}x{layers}"


def traversal_mode(infra: kit.Infra) -> str:
    """The traversal the current stack uses: Option A and/or B once adopted, else sequential."""
    a, b = infra.has("option_a"), infra.has("option_b")
    return "a+b" if a and b else "option_a" if a else "option_b" if b else "sequential"


def block_seed(pass_no: int, block: int) -> int:
    """The seed every config of one block trains with: the same within a block (common random numbers,
    so the comparison sees the configs, not the deal), different across blocks and passes."""
    return int(np.random.SeedSequence([SEED, pass_no, block]).generate_state(1, dtype=np.uint32)[0])


def block_order(names: list[str], pass_no: int, block: int) -> list[str]:
    """The configs in a random order within the block, seeded, so a rerun of the block runs them alike."""
    order = list(names)
    random.Random(block_seed(pass_no, block)).shuffle(order)
    return order


def _positive_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{name}={raw!r}: model_size needs a positive integer")
    return int(raw)


def run(args, infra: kit.Infra) -> None:
    plan = PLANS[args.size]
    blocks = plan.blocks if args.repeats is None else args.repeats
    if blocks < 1:
        raise SystemExit(f"--repeats {blocks}: model_size needs at least one block")
    iterations = _positive_env("OPTSEQ_ITERATIONS", plan.iterations)
    pass_no = _positive_env("OPTSEQ_PASS", 1)
    device = pick_device(args.device)
    toggles = Toggles.from_infra(infra, device)
    traversal = traversal_mode(infra)
    game = LeducGame()
    names = [config_name(h, l) for h, l in plan.configs]
    shapes = dict(zip(names, plan.configs))
    print(f"model_size: {', '.join(names)}; pass {pass_no}, {blocks} block{'s' * (blocks != 1)} of "
          f"{iterations} iterations per config, traversal {traversal}, {toggles}", flush=True)
    total = blocks * len(names) * (iterations + 1)
    done = 0
    for block in range(blocks):
        seed = block_seed(pass_no, block)
        for name in block_order(names, pass_no, block):
            hidden, layers = shapes[name]
            trainer = DeepCFRTrainer(game, DeepCFRConfig(
                iterations=iterations, traversals=plan.traversals, hidden=hidden, layers=layers,
                batch_size=plan.batch_size, train_steps=plan.train_steps,
                policy_train_steps=plan.policy_train_steps, seed=seed, traversal=traversal), toggles)
            where = f"block {block + 1}/{blocks} {name}"
            for i in range(iterations):
                start = time.perf_counter()
                stats = trainer.run_iteration()
                kit.sample(name, "s_per_iter", time.perf_counter() - start, "s", False, block)
                done += 1
                kit.progress(done, total, f"{where} iteration {i + 1}/{iterations} loss {stats['loss']:.4g}")
            start = time.perf_counter()
            value = exploitability(game, trainer.average_policy())
            kit.sample(name, "exploitability", value, "chips/hand", False, block)
            done += 1
            kit.progress(done, total, f"{where} exploitability {value:.4f} "
                                           f"({time.perf_counter() - start:.1f} s)")
