"""A stand-in workload for screens: `--amp`, `--compile` and `--null` (0 or 1) as three levers with known effects,
AMP 1.25×, compile 1.05× alone and 1.26× with AMP on (an interaction of 1.2×), the null lever none; it prints a rate.

Seeded by its flags, the block (OPTSEQ_PAIR in a design run) and the pass, so every screen of it sees the same
samples. With SCREEN_HOLD=PATH it waits, before its first measured run of block SCREEN_HOLD_BLOCK (2 by default),
until PATH exists, and says so by creating PATH.held: a test sees a screen mid-way without racing it."""
import argparse
import os
import random
import time

p = argparse.ArgumentParser()
for flag in ("amp", "compile", "null"):
    p.add_argument(f"--{flag}", type=int, default=0)
args = p.parse_args()
block = os.environ.get("OPTSEQ_PAIR", "")
hold = os.environ.get("SCREEN_HOLD")
if hold and block == os.environ.get("SCREEN_HOLD_BLOCK", "2"):
    open(hold + ".held", "a").close()
    while not os.path.exists(hold):  # a test's file, not a time: the test creates it once it has looked
        time.sleep(0.01)
rng = random.Random(f"{os.environ.get('OPTSEQ_PASS')}:{block}:{args.amp}:{args.compile}:{args.null}")
rate = 100.0 * (1.25 if args.amp else 1) * (1.05 if args.compile else 1) * (1.2 if args.amp and args.compile else 1)
print(f"rate: {rate * (1 + rng.gauss(0, 0.005)):.3f} items/s")
