"""A stand-in lever for run tests: paired A/B samples with a chosen true ratio, noise and failure modes.

Not the engine: it proves that any external command speaking the run protocol can be a lever.
"""
import argparse
import json
import os
import random
import sys
import time


def emit(**event):
    print(json.dumps(event), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ratio", type=float, default=1.0, help="true candidate/baseline throughput ratio")
    p.add_argument("--noise", type=float, default=0.01, help="relative noise per sample")
    p.add_argument("--guard", default=None, help="NAME=VALUE:LIMIT quality event")
    p.add_argument("--mode", default="ok", choices=["ok", "crash", "hang", "unavailable", "garbage", "nodone"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--code-hash", default="abc123", help="the workload code hash reported in env")
    p.add_argument("--straddle", action="store_true",
                   help="launches alternate symmetrically around --ratio, so no number of launches settles it")
    p.add_argument("--arms", default="", help="comma list NAME:COST:QUALITY for a multi-arm experiment")
    p.add_argument("--pause", type=float, default=0.0, help="seconds between pairs")
    args = p.parse_args()
    repeats = int(os.environ.get("OPTSEQ_REPEATS", "5"))
    run_id = os.environ.get("OPTSEQ_RUN_ID", "?")
    # every launch draws fresh numbers, as a real bench's do: a pass that repeated an earlier one is a replay
    rng = random.Random(f"{args.seed}:{repeats}:{run_id}:{os.environ.get('OPTSEQ_PASS', '1')}")
    print(f"ab lever starting: run {run_id}, {repeats} pairs", flush=True)
    emit(event="env", device="test-device", python=sys.version.split()[0], code_hash=args.code_hash)
    if args.mode == "unavailable":
        emit(event="unavailable", reason="needs a device this machine lacks")
        emit(event="done")
        return 0
    if args.mode == "hang":
        emit(event="progress", done=0, total=repeats, msg="about to hang")
        while True:
            time.sleep(1)
    if args.mode == "garbage":
        print('{"event": "sample", "arm": "baseline", "val', flush=True)
        print("[1, 2, 3]", flush=True)
        print('{"no_event": true}', flush=True)
        sys.stdout.buffer.write(b"\xff\xfe not utf-8\n")
        sys.stdout.flush()
    if args.arms:
        for i, spec in enumerate(args.arms.split(",")):
            name, cost, quality = spec.split(":")
            for r in range(3):
                emit(event="sample", arm=name, metric="s_per_iter", value=float(cost) * (1 + 0.01 * r),
                     unit="s", higher_is_better=False, pair=r)
                emit(event="sample", arm=name, metric="exploitability", value=float(quality) * (1 + 0.01 * r),
                     unit="chips", higher_is_better=False, pair=r)
            emit(event="progress", done=i + 1, total=len(args.arms.split(",")), msg=name)
        emit(event="done")
        return 0
    for i in range(repeats):
        base = 100.0 * (1 + rng.gauss(0, args.noise))
        cand = 100.0 * args.ratio * (1 + rng.gauss(0, args.noise))
        if args.straddle:
            this_pass = int(os.environ.get("OPTSEQ_PASS", "1"))
            base = 100.0 * (1 + 1e-9 * this_pass)  # a new pass is not a replay
            cand = 100.0 * args.ratio * (1 + args.noise * (1 if this_pass % 2 else -1) * (1 + i % 3))
        # in the order kit.pairs runs the arms (A B B A, the other way round every other launch): a bench whose
        # samples came baseline first in every pair would not be decided
        arms = [("baseline", base), ("candidate", cand)]
        for arm, value in arms if (i + int(os.environ.get("OPTSEQ_PASS", "1"))) % 2 == 1 else arms[::-1]:
            emit(event="sample", arm=arm, metric="items_per_s", value=value, unit="items/s", higher_is_better=True,
                 pair=i)
        emit(event="progress", done=i + 1, total=repeats, msg=f"pair {i + 1}")
        if args.mode == "crash" and i == 1:
            raise RuntimeError("simulated crash in the middle of the run")
        time.sleep(args.pause)
    if args.guard:
        name, rest = args.guard.split("=")
        value, limit = rest.split(":")
        emit(event="quality", name=name, value=float(value), limit=float(limit))
    if args.mode != "nodone":
        emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
