"""torch.compile lever: trainer throughput of the current stack vs the same stack compiled.

Compilation happens in an untimed first step per arm (its time is logged, not measured).
Guard: after the run, the compiled model's outputs vs the same weights run eagerly (max abs difference).
"""
from __future__ import annotations

from optseq.engine import kit
from optseq.engine.bench import net_workload as wl

LR = 1e-3
# fp32 kernels fused differently agree to rounding; under autocast the arms round in 16 bits.
MAX_ABS_DIFF_FP32 = 1e-3
MAX_ABS_DIFF_AMP = 5e-2


def run(args, infra: kit.Infra) -> None:
    ab = wl.trainer_ab(args, infra, "compile", LR, compile=True)
    for name, stepper in (("baseline", ab.baseline), ("candidate", ab.candidate)):
        print(f"compile: {name} first step {wl.timed_step(stepper, ab.x, ab.target, ab.weight):.2f} s"
              + (" (compile time)" if stepper.toggles.compile else ""), flush=True)
    ab.pair("compile")
    candidate, candidate_toggles, x = ab.candidate, ab.candidate.toggles, ab.x

    # Grad mode on, as in training, so the compiled graph is reused rather than recompiled for eval.
    with candidate_toggles.autocast():
        compiled = candidate.model(x).detach().float()
        eager = candidate.module(x).detach().float()
    limit = MAX_ABS_DIFF_AMP if candidate_toggles.amp != "off" else MAX_ABS_DIFF_FP32
    kit.quality("max_abs_output_diff", float((compiled - eager).abs().max()), limit)
