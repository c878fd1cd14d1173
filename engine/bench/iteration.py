"""One configuration of a real Deep CFR iteration on Leduc, timed: the workload whose levers are its flags.

`python -m optseq.engine.bench iteration [--amp=bf16|off] [--compile=on|off] [--option-a=on|off] [--hidden=N]`

The amp, compile and option_a benches run both arms inside one process, so they cannot be composed: this bench
runs one arm, and each lever is a change to its command line (configs/examples/screen_engine/plan.toml), so a
screening design can apply any subset of them. An iteration is what DeepCFRTrainer does (engine/train/deep_cfr.py):
traversals for both players, sequential or through Option A's central inference server, then the advantage net
retrained on the reservoir, under the toggles (bf16 autocast or fp32, eager or torch.compile).

The first iterations are a warm-up, untimed (they absorb torch.compile's compilation and the allocator's first
touches); the timed ones follow. It prints a line per timed iteration and, last, one JSON line:
`{"iter_per_s": …, "samples_per_s": …, "final_loss": …, …}`. iter_per_s is 1 / the median timed iteration (a
stall in one iteration does not move it), iter_per_cpu_s the same over the process's CPU time; final_loss is the last iteration's training loss, a guard: a lever that
breaks training moves it far more than bf16 rounding does.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from optseq.engine import kit

WORKERS = 4
"""Option A's worker threads: the trainer's default (engine/train/deep_cfr.py)."""


def _on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {value!r}")
    return value == "on"


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return int(value)


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}")
    return int(value)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m optseq.engine.bench iteration", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--amp", choices=["bf16", "off"], default="off", help="bf16 autocast, or fp32")
    p.add_argument("--compile", type=_on_off, default=False, metavar="on|off", help="torch.compile the nets")
    p.add_argument("--option-a", type=_on_off, default=False, metavar="on|off",
                   help=f"traverse through Option A's inference server ({WORKERS} workers), not one query at a time")
    p.add_argument("--hidden", type=_positive, default=64, help="hidden width of the advantage net")
    p.add_argument("--layers", type=_positive, default=3, help="hidden layers of the advantage net")
    p.add_argument("--traversals", type=_positive, default=40, help="traversals per player per iteration")
    p.add_argument("--train-steps", type=_positive, default=40, help="optimiser steps per iteration")
    p.add_argument("--batch", type=_positive, default=256, help="rows per optimiser step")
    p.add_argument("--warmup", type=_count, default=1, help="untimed iterations first")
    p.add_argument("--iterations", type=_positive, default=3, help="timed iterations")
    p.add_argument("--threads", type=_positive, default=1,
                   help="torch intra-op threads (one: the levers are measured, not how a shared machine schedules)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="torch device")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    kit.watch_parent()
    import torch  # here, not at the top: --help and a bad flag answer without it

    from optseq.engine.games.leduc import LeducGame
    from optseq.engine.train.deep_cfr import DeepCFRConfig, DeepCFRTrainer
    from optseq.engine.train.toggles import Toggles

    torch.set_num_threads(args.threads)
    toggles = Toggles(amp=args.amp, compile=args.compile, device=args.device)
    config = DeepCFRConfig(
        iterations=args.warmup + args.iterations, traversals=args.traversals, hidden=args.hidden,
        layers=args.layers, batch_size=args.batch, train_steps=args.train_steps, seed=args.seed,
        traversal="option_a" if args.option_a else "sequential", workers=WORKERS)
    trainer = DeepCFRTrainer(LeducGame(), config, toggles)
    print(f"iteration: h{args.hidden}x{args.layers}, {args.traversals} traversals a player, "
          f"{args.train_steps} steps of {args.batch}, traversal {config.traversal}, {toggles}, "
          f"{args.threads} thread{'s' * (args.threads != 1)}", flush=True)
    for i in range(args.warmup):
        start = time.perf_counter()
        trainer.run_iteration()
        print(f"warm-up {i + 1}/{args.warmup}: {time.perf_counter() - start:.3f} s", flush=True)
    timed = []
    for i in range(args.iterations):
        start, cpu = time.perf_counter(), time.process_time()
        stats = trainer.run_iteration()
        stats["s"], stats["cpu_s"] = time.perf_counter() - start, time.process_time() - cpu
        timed.append(stats)
        print(f"iteration {i + 1}/{args.iterations}: {stats['s']:.3f} s (traverse {stats['traverse_s']:.3f} s, "
              f"train {stats['train_s']:.3f} s), {stats['samples']} samples, loss {stats['loss']:.5g}", flush=True)
    median = statistics.median(s["s"] for s in timed)
    result = {
        "iter_per_s": round(1.0 / median, 6),
        "samples_per_s": round(sum(s["samples"] for s in timed) / sum(s["s"] for s in timed), 3),
        # CPU seconds of the whole process (every thread): on a machine others load, wall time says how long the
        # iteration took here and now, CPU time how much work it was; Option A's overlap shows only in the first
        "iter_per_cpu_s": round(1.0 / statistics.median(s["cpu_s"] for s in timed), 6),
        "traverse_s": round(statistics.median(s["traverse_s"] for s in timed), 6),
        "train_s": round(statistics.median(s["train_s"] for s in timed), 6),
        "final_loss": round(timed[-1]["loss"], 6),
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
