"""AMP lever: trainer throughput of the current stack vs the same stack with bf16 autocast.

Guard: both arms take the same steps on the same batch from the same weights; their final fp32
losses may differ by at most LOSS_DELTA_LIMIT of the starting loss.
"""
from __future__ import annotations

import copy
from dataclasses import replace

import torch

from engine.bench import net_workload as wl
from engine.bench import protocol
from engine.bench.envinfo import pick_device
from engine.nets.mlp import MLP
from engine.train.toggles import Stepper, Toggles

LR = 1e-3
LOSS_DELTA_LIMIT = 0.01


def run(args, infra: protocol.Infra) -> None:
    device = pick_device(args.device)
    size = wl.SIZES[args.size]
    repeats, warmup = wl.repeats_and_warmup(args, args.size)
    config = wl.model_config(args.size, infra)
    baseline_toggles = Toggles.from_infra(wl.without(infra, "amp"), device)
    candidate_toggles = replace(baseline_toggles, amp="bf16")
    print(f"amp: model {config}, batch {size.batch}, {size.steps} steps per sample; "
          f"baseline {baseline_toggles}, candidate {candidate_toggles}", flush=True)

    torch.manual_seed(wl.SEED)
    model = MLP(config)
    baseline = Stepper(copy.deepcopy(model), baseline_toggles, LR)
    candidate = Stepper(copy.deepcopy(model), candidate_toggles, LR)
    x, target, weight = wl.fixed_batch(size.batch, config.actions, device=device)
    start_loss = wl.eval_loss(baseline, x, target, weight)

    for name, stepper in (("baseline", baseline), ("candidate", candidate)):
        # One untimed step per arm absorbs compilation when compile is already in the stack.
        print(f"amp: {name} first step {wl.timed_step(stepper, x, target, weight):.2f} s", flush=True)

    protocol.paired(
        lambda: wl.train_throughput(baseline, x, target, weight, size.steps),
        lambda: wl.train_throughput(candidate, x, target, weight, size.steps),
        repeats=repeats, warmup=warmup, metric="train_samples_per_s", unit="samples/s",
        higher_is_better=True, label="amp",
    )

    base_loss = wl.eval_loss(baseline, x, target, weight)
    cand_loss = wl.eval_loss(candidate, x, target, weight)
    print(f"amp: loss start {start_loss:.5f}, baseline {base_loss:.5f}, candidate {cand_loss:.5f}", flush=True)
    protocol.quality("loss_delta", abs(cand_loss - base_loss) / start_loss, LOSS_DELTA_LIMIT)
