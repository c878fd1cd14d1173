"""A stand-in workload for screens: its speed is a product of known per-lever factors and one known interaction.

--fast=1 multiplies the rate by 1.5 and --wide=1 by 1.3; NULL_KNOB=1 changes nothing; --fuse=1 alone changes
nothing, but with --fast=1 on multiplies it by 1.4 (fuse × fast: fuse gains only with fast on). Each launch's
noise (1% lognormal) is seeded from its launch token, arm and block (OPTSEQ_LAUNCH, OPTSEQ_ARM, OPTSEQ_PAIR), so a
test asserts a decision, never a timing: at 1% against effects of 30% and more, every call is certain far beyond
1e-6 (SCREEN_NOISE sets another spread, SCREEN_FIXED a noise the launch does not seed). With SCREEN_HOLD_BLOCK set, a run of that block becomes lever_scripts/held.py (it writes its pids to
$HELD_DIR and blocks until stopped): a screen held at a known point. SCREEN_FUSE sets fuse × fast's factor (1.4);
SCREEN_STALL=F makes the screen's design run with every lever off (the knobs NULL_KNOB, KNOB2-4 unset) F times slow
in block 1: one stalled launch at a known place, never one of the paired runs."""
import argparse
import math
import os
import random
import sys
from pathlib import Path

p = argparse.ArgumentParser()
for flag in ("fast", "wide", "fuse"):
    p.add_argument(f"--{flag}", type=int, default=0)
args = p.parse_args()
if os.environ.get("SCREEN_HOLD_BLOCK") and os.environ.get("OPTSEQ_PAIR") == os.environ["SCREEN_HOLD_BLOCK"]:
    held = str(Path(__file__).with_name("held.py"))
    os.execv(sys.executable, [sys.executable, held])
# SCREEN_FIXED: each run's noise a fixed function of its design run and block alone, whatever the launch: a screen
# whose calls hang on its noise (levers at their threshold) comes to the same calls every time
launch = "" if os.environ.get("SCREEN_FIXED") else os.environ.get("OPTSEQ_LAUNCH")
seed = f"{launch}:{os.environ.get('OPTSEQ_ARM')}:{os.environ.get('OPTSEQ_PAIR')}"
rng = random.Random(seed)
rate = 100.0 * (1.5 if args.fast else 1.0) * (1.3 if args.wide else 1.0)
if args.fuse and args.fast:
    rate *= float(os.environ.get("SCREEN_FUSE", "1.4"))
knobs = ("NULL_KNOB", "KNOB2", "KNOB3", "KNOB4")
plain = not (args.fast or args.wide or args.fuse or any(os.environ.get(k) == "1" for k in knobs))
if (os.environ.get("SCREEN_STALL") and plain and os.environ.get("OPTSEQ_PAIR") == "1"
        and os.environ.get("OPTSEQ_ARM", "").startswith("run-")):
    rate /= float(os.environ["SCREEN_STALL"])
rate *= math.exp(rng.gauss(0, float(os.environ.get("SCREEN_NOISE", "0.01"))))
print(f"flags: fast={args.fast} wide={args.wide} fuse={args.fuse} null={os.environ.get('NULL_KNOB', '0')}")
print(f"rate: {rate:.4f} items/s")
print(f"err: {0.9 if args.wide else 0.1}")  # --wide=1 costs accuracy: a guard on err breaks with it alone
