"""A stand-in lever that misbehaves the way other people's benchmarks do, one way per --mode.

Every launch appends a line to --launches, so a test can count how often optseq started it.
"""
import argparse
import json
import os
import random
import sys
import time


def emit(**event):
    print(json.dumps(event), flush=True)


def sample(arm, value, pair, metric="items_per_s", higher=True):
    emit(event="sample", arm=arm, metric=metric, value=value, unit="items/s", higher_is_better=higher, pair=pair)


def both(base, cand, pair, **kw):
    """Both arms of a pair in the order kit.pairs runs them (A B B A, the other way round every other launch): a
    bench whose samples came baseline first in every pair would not be decided."""
    arms = [("baseline", base), ("candidate", cand)]
    for arm, value in arms if (pair + int(os.environ.get("OPTSEQ_PASS", "1"))) % 2 == 1 else arms[::-1]:
        sample(arm, value, pair, **kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True, choices=[
        "wrong_metric", "zeros", "one_arm", "duplicate_pair", "flip_direction", "replay", "extra_pairs",
        "hang_second_pass", "half_lines", "saved_output"])
    p.add_argument("--ratio", type=float, default=1.5)
    p.add_argument("--launches", default=None)
    args = p.parse_args()
    repeats = int(os.environ.get("OPTSEQ_REPEATS", "6"))
    this_pass = int(os.environ.get("OPTSEQ_PASS", "1"))
    if args.launches:
        with open(args.launches, "a") as f:
            f.write(f"{this_pass} {repeats}\n")
    emit(event="env", device="test-device")
    if args.mode == "saved_output":  # measures once, then prints what it saved: every launch gets launch 1's numbers
        saved = os.path.join(os.path.dirname(args.launches), "saved.jsonl")
        if this_pass == 1:
            rng = random.Random(1)
            with open(saved, "w") as f:
                for i in range(repeats):
                    for arm, mean in (("baseline", 100.0), ("candidate", 100.0 * args.ratio)):
                        line = json.dumps({"event": "sample", "arm": arm, "metric": "items_per_s", "pair": i,
                                           "value": mean * (1 + rng.gauss(0, 0.05)), "unit": "items/s",
                                           "higher_is_better": True, "launch": os.environ.get("OPTSEQ_LAUNCH")})
                        f.write(line + "\n")
        with open(saved) as f:
            print(f.read(), end="", flush=True)
        emit(event="done")
        return 0
    # a fresh seed per pass, except in replay mode, which ignores both OPTSEQ_REPEATS and the pass
    rng = random.Random(0 if args.mode == "replay" else this_pass)
    n = 6 if args.mode == "replay" else repeats
    if args.mode == "hang_second_pass" and this_pass > 1:
        emit(event="progress", done=0, total=repeats, msg="stuck")
        while True:
            time.sleep(1)
    for i in range(n):
        base = 100.0 * (1 + rng.gauss(0, 0.05))
        cand = 100.0 * args.ratio * (1 + rng.gauss(0, 0.05))
        if args.mode == "wrong_metric":
            both(base, cand, i, metric="items_per_sec")
        elif args.mode == "zeros":
            both(0.0, 0.0, i)
        elif args.mode == "one_arm":
            sample("baseline", base, i)
        elif args.mode == "duplicate_pair":
            sample("baseline", base, 0)  # every pair numbered 0
            sample("candidate", cand, 0)
        elif args.mode == "flip_direction":
            higher = i < n // 2
            both(base, cand, i, higher=higher)
        elif args.mode == "half_lines":
            sys.stdout.write('{"event": "sample", "arm": "baseline", "metric": "items_per_s", "val')
            sys.stdout.flush()
            print("", flush=True)
            both(base, cand, i)
        else:  # replay, extra_pairs, hang_second_pass
            both(base, cand, i)
        emit(event="progress", done=i + 1, total=n, msg=f"pair {i + 1}")
    if args.mode == "extra_pairs":
        for i in range(n, n + 3):
            both(100.0 * (1 + rng.gauss(0, 0.05)), 100.0 * args.ratio * (1 + rng.gauss(0, 0.05)), i)
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
