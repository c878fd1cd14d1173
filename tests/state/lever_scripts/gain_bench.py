"""A stand-in benchmark whose gain is set from outside: `--fast=1` multiplies its rate by $GAIN (default 1.5, as the
code the lever adopted gave it), `--other=1` by 1.3. Each run draws a per-launch offset (sd 2%) and per-sample
noise (1%) from a seed of its pass, arm and pair, and prints a rounded rate: the same numbers on a loaded machine,
and a gain that is lost the moment the environment says so, as a library upgrade loses one."""
import argparse
import os
import random

p = argparse.ArgumentParser()
p.add_argument("--fast", type=int, default=0)
p.add_argument("--other", type=int, default=0)
args = p.parse_args()
seed = f"{os.environ.get('OPTSEQ_PASS')}:{os.environ.get('OPTSEQ_ARM')}:{os.environ.get('OPTSEQ_PAIR')}:{args}"
rng = random.Random(seed)
rate = 100.0 * (float(os.environ.get("GAIN", "1.5")) if args.fast else 1.0) * (1.3 if args.other else 1.0)
rate *= rng.lognormvariate(0, 0.02) * (1 + rng.gauss(0, 0.01))
print(f"rate: {rate:.4g} items/s")
