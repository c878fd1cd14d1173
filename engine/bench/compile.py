"""torch.compile lever: trainer throughput of the current stack vs the same stack compiled.

Compilation happens in an untimed first step per arm (its time is logged, not measured).
Guard: after the run, the compiled model's outputs vs the same weights run eagerly (max abs difference).
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
# fp32 kernels fused differently agree to rounding; under autocast the arms round in 16 bits.
MAX_ABS_DIFF_FP32 = 1e-3
MAX_ABS_DIFF_AMP = 5e-2


def run(args, infra: protocol.Infra) -> None:
    device = pick_device(args.device)
    size = wl.SIZES[args.size]
    repeats, warmup = wl.repeats_and_warmup(args, args.size)
    config = wl.model_config(args.size, infra)
    baseline_toggles = Toggles.from_infra(wl.without(infra, "compile"), device)
    candidate_toggles = replace(baseline_toggles, compile=True)
    print(f"compile: model {config}, batch {size.batch}, {size.steps} steps per sample; "
          f"baseline {baseline_toggles}, candidate {candidate_toggles}", flush=True)

    torch.manual_seed(wl.SEED)
    model = MLP(config)
    baseline = Stepper(copy.deepcopy(model), baseline_toggles, LR)
    candidate = Stepper(copy.deepcopy(model), candidate_toggles, LR)
    x, target, weight = wl.fixed_batch(size.batch, config.actions, device=device)

    for name, stepper in (("baseline", baseline), ("candidate", candidate)):
        print(f"compile: {name} first step {wl.timed_step(stepper, x, target, weight):.2f} s"
              + (" (compile time)" if stepper.toggles.compile else ""), flush=True)

    protocol.paired(
        lambda: wl.train_throughput(baseline, x, target, weight, size.steps),
        lambda: wl.train_throughput(candidate, x, target, weight, size.steps),
        repeats=repeats, warmup=warmup, metric="train_samples_per_s", unit="samples/s",
        higher_is_better=True, label="compile",
    )

    # Grad mode on, as in training, so the compiled graph is reused rather than recompiled for eval.
    with candidate_toggles.autocast():
        compiled = candidate.model(x).detach().float()
        eager = candidate.module(x).detach().float()
    limit = MAX_ABS_DIFF_AMP if candidate_toggles.amp != "off" else MAX_ABS_DIFF_FP32
    protocol.quality("max_abs_output_diff", float((compiled - eager).abs().max()), limit)
