"""A team's own benchmark, as it is: no optseq import, prints its number its own way (a command-pair arm).

Deterministic, so a test knows what each arm reports: the rate is RATE (default 100), times FAST_FACTOR
when FAST=1, plus the pair number (OPTSEQ_PAIR) / 1000 so no two pairs replay the same numbers. A
warm-up reports 1e9, a value no measured pair has, so a test can tell whether warm-ups were dropped.
Every run appends "ARM PAIR FAST=.. STACK=.." to $CALLS (the order the arms really ran in).

--style regex|json|file|halfline|silent|crash|stale_file|hang picks how it reports (or misbehaves).
"""
import argparse
import json
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--style", default="regex")
p.add_argument("--out", default="result.json")
args = p.parse_args()

pair = os.environ.get("OPTSEQ_PAIR", "0")
fast = os.environ.get("FAST") == "1"
if pair.startswith("warmup"):
    rate = 1e9
else:
    rate = float(os.environ.get("RATE", "100")) * (float(os.environ.get("FAST_FACTOR", "2")) if fast else 1.0)
    rate += int(pair) / 1000
loss = 0.5 + (float(os.environ.get("LOSS_SHIFT", "0")) if fast else 0.0)
if os.environ.get("CALLS"):
    with open(os.environ["CALLS"], "a") as f:
        f.write(f"{os.environ.get('OPTSEQ_ARM')} {pair} FAST={int(fast)} STACK={os.environ.get('STACKED', '-')}\n")

print("loading data")
if args.style in ("regex", "halfline"):
    print("epoch 1 samples/s: 1.0 (still warming)")  # an earlier match: the last one must win
if args.style == "regex":
    print(f"samples/s: {rate:.3f}")
    print(f"final loss {loss:.4f}")
elif args.style == "json":
    print(json.dumps({"samples_per_s": rate, "final_loss": loss}))
    print(json.dumps({"note": "a later JSON line without the key"}))
elif args.style in ("file", "stale_file"):
    if args.style == "file" or not os.path.exists(args.out):
        with open(args.out, "w") as f:
            json.dump({"metrics": {"samples_per_s": rate}}, f)
    print("wrote the result file")
elif args.style == "halfline":
    sys.stdout.write(f"samples/s: {rate:.3f}\nfinal loss {loss:.4f}")  # no newline at the end
elif args.style == "silent":
    print("done training, throughput not printed")
elif args.style == "hang":
    with open(os.environ["PIDFILE"], "a") as f:
        f.write(f"{os.getpid()}\n")
    print("epoch 1 of 1000", flush=True)
    import time
    while True:
        time.sleep(60)
elif args.style == "crash":
    print("CUDA error: out of memory", flush=True)
    sys.exit(3)
