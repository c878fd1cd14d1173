"""A stand-in benchmark configured by --key=value flags: it prints the flags it was given and a throughput that
each step up of --a or --b multiplies by 1.5 (and `--ms` prints a time instead, lower for the faster flags).

Seeded by the pass, arm and pair optseq gives it (OPTSEQ_PASS, OPTSEQ_ARM, OPTSEQ_PAIR), so every run is the same and a test
asserts a decision, not a timing."""
import argparse
import os
import random

p = argparse.ArgumentParser()
p.add_argument("--a", type=int, default=1)
p.add_argument("--b", type=int, default=1)
p.add_argument("--ms", action="store_true", help="print a time per item instead of a rate")
args = p.parse_args()
rng = random.Random(f"{os.environ.get('OPTSEQ_PASS')}:{os.environ.get('OPTSEQ_ARM')}:{os.environ.get('OPTSEQ_PAIR')}:"
                    f"{args.a}:{args.b}")
rate = 100.0 * 1.5 ** (args.a - 1) * 1.5 ** (args.b - 1) * (1 + rng.gauss(0, 0.01))
print(f"flags: a={args.a} b={args.b} env={os.environ.get('STACKED', '-')}")
if args.ms:
    print(f"time: {1000.0 / rate:.4f} ms")
else:
    print(f"rate: {rate:.3f} items/s")
