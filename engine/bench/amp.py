"""AMP lever: trainer throughput of the current stack vs the same stack with bf16 autocast.

Guard: both arms take the same steps on the same batch from the same weights; their final fp32
losses may differ by at most LOSS_DELTA_LIMIT of the starting loss.
"""
from __future__ import annotations

from optseq.engine import kit
from optseq.engine.bench import net_workload as wl

LR = 1e-3
LOSS_DELTA_LIMIT = 0.01


def run(args, infra: kit.Infra) -> None:
    ab = wl.trainer_ab(args, infra, "amp", LR, amp="bf16")
    start_loss = wl.eval_loss(ab.baseline, ab.x, ab.target, ab.weight)
    for name, stepper in (("baseline", ab.baseline), ("candidate", ab.candidate)):
        # One untimed step per arm absorbs compilation when compile is already in the stack.
        print(f"amp: {name} first step {wl.timed_step(stepper, ab.x, ab.target, ab.weight):.2f} s", flush=True)
    ab.pair("amp")
    base_loss = wl.eval_loss(ab.baseline, ab.x, ab.target, ab.weight)
    cand_loss = wl.eval_loss(ab.candidate, ab.x, ab.target, ab.weight)
    print(f"amp: loss start {start_loss:.5f}, baseline {base_loss:.5f}, candidate {cand_loss:.5f}", flush=True)
    kit.quality("loss_delta", abs(cand_loss - base_loss) / start_loss, LOSS_DELTA_LIMIT)
