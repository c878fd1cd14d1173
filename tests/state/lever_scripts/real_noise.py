"""A stand-in bench whose noise behaves like a real machine's, one knob per way: each launch its own speed, drift
over the calls of a process, a candidate that stalls now and then, output rounded to a few digits.

It measures nothing: every value is drawn from a seed and the pass (OPTSEQ_PASS), so a run is the same every
time, and the test asserts optseq's decision, not a timing. The arms run in the lever kit's order
(`--order alternate|random`), or baseline first in every pair (`--order baseline-first`, what the old
`kit.paired` did), each sample saying which arm ran first; with `--silent` no sample says it, and each is written
as its arm is measured (a bench that calls kit.sample without `first`), after `--warmup-calls` unreported calls
of each arm. `--warmup F` makes the process's first calls slower by F, fading by e every two calls.
"""
import argparse
import math
import random

from optseq.engine import kit


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ratio", type=float, default=1.0, help="the candidate's true median throughput ratio")
    p.add_argument("--noise", type=float, default=0.005, help="relative noise per sample")
    p.add_argument("--launch-offsets", default="", help="comma list of percent offsets of the candidate, one per "
                                                         "launch in turn: each launch its own speed")
    p.add_argument("--drift", type=float, default=0.0, help="relative speed-up per call of the process")
    p.add_argument("--stall", type=float, default=0.0, help="share of the candidate's calls 20x slower")
    p.add_argument("--digits", type=int, default=None, help="significant digits printed")
    p.add_argument("--order", default="alternate", choices=["alternate", "random", "baseline-first"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=float, default=0.0, help="the first calls' slowdown, fading by e every two calls")
    p.add_argument("--silent", action="store_true", help="no sample says which arm ran first")
    p.add_argument("--warmup-calls", type=int, default=1, help="unreported calls of each arm before the pairs")
    args = p.parse_args()
    this_pass = kit.pass_number()
    rng = random.Random(f"{args.seed}:{this_pass}")
    offsets = [float(x) for x in args.launch_offsets.split(",") if x]
    offset = 1 + offsets[(this_pass - 1) % len(offsets)] / 100 if offsets else 1.0
    calls = [0]

    def arm(name):
        def call():
            speed = 100.0 * (args.ratio * offset if name == "candidate" else 1.0)
            value = speed * (1 + rng.gauss(0, args.noise)) * (1 + args.drift * calls[0])
            value /= 1 + args.warmup * math.exp(-calls[0] / 2)  # a throughput: a slow call is a low value
            calls[0] += 1
            if name == "candidate" and rng.random() < args.stall:
                value /= 20
            return float(f"{value:.{args.digits}g}") if args.digits else value
        return call

    repeats = kit.repeats(6)
    spec = dict(metric="items_per_s", unit="items/s", higher_is_better=True)
    kit.env(device="test-device")
    if args.silent:
        arms = [("baseline", arm("baseline")), ("candidate", arm("candidate"))]
        for _ in range(args.warmup_calls):
            for _, call in arms:
                call()
        order = random.Random(f"order:{args.seed}:{this_pass}")
        for i in range(repeats):
            if args.order == "baseline-first":
                base_first = True
            elif args.order == "alternate":  # as kit.pairs: A B B A, every other launch B A A B
                base_first = (i + this_pass % 2) % 2 == 1
            else:
                base_first = order.random() < 0.5
            for name, call in arms if base_first else arms[::-1]:
                kit.sample(name, value=call(), pair=i, **spec)  # written as it is measured, no `first`
    elif args.order == "baseline-first":
        base, cand = arm("baseline"), arm("candidate")
        for i in range(repeats):
            kit.sample("baseline", value=base(), pair=i, first=True, **spec)
            kit.sample("candidate", value=cand(), pair=i, first=False, **spec)
    else:
        kit.pairs(arm("baseline"), arm("candidate"), repeats=repeats, warmup=0, order=args.order, **spec)
    kit.done()


if __name__ == "__main__":
    main()
