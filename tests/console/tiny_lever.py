"""A fast stand-in lever for console tests: A/B pairs with a fixed ratio, log lines, optional pauses.

With TINY_LEVER_HOLD=PATH in its environment it stops after each pair until PATH exists, so a test
can catch a run mid-way without racing it; TINY_LEVER_HOLD_PASS=N holds in pass N only. TINY_LEVER_HOLD_MID=PATH
stops inside pass 2's first pair instead, its baseline sample sent and its candidate's not, until PATH exists.
Its arms come in the order kit.pairs runs them (A B B A), so a run of it is decided.

Speaks the run protocol like the engine's benches, so the console is tested without the engine. Each pass
is one launch of it, measuring the OPTSEQ_REPEATS pairs it is asked for; its values are drawn from OPTSEQ_PASS,
so every launch brings fresh numbers (optseq fails a run whose pass repeats an earlier one value for value, a
replay) while two runs of the same lever give the same samples, pass for pass.
"""
import argparse
import json
import os
import sys
import time


def emit(**event):
    print(json.dumps(event), flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ratio", type=float, default=1.5, help="candidate/baseline throughput, exactly")
    p.add_argument("--pause", type=float, default=0.0, help="seconds after each pair (a slow, cancellable run)")
    p.add_argument("--log-lines", type=int, default=3, help="plain log lines before the first pair")
    p.add_argument("--first-pair-ratio", type=float, default=None,
                   help="the ratio of pass 1's first pair only (a first pass that cannot decide alone)")
    p.add_argument("--metric", default="items_per_s", help="the metric its samples carry (a plan's rule names one)")
    p.add_argument("--quality", action="append", default=[], metavar="NAME=VALUE:LIMIT",
                   help="a quality event each launch reports (a rule's guard)")
    p.add_argument("--bench-size", default=None, help="the bench size its env event reports, as the engine's do")
    args = p.parse_args()
    pairs = int(os.environ.get("OPTSEQ_REPEATS", "6"))
    first = 100.0 * int(os.environ.get("OPTSEQ_PASS", "1"))  # each launch its own numbers, never a replay
    for i in range(args.log_lines):
        print(f"tiny lever log line {i}", flush=True)
    size = {"bench_size": args.bench_size} if args.bench_size else {}
    emit(event="env", device="tiny-device", python=sys.version.split()[0], code_hash="tiny", **size)
    for i in range(pairs):
        # a small deterministic spread, so the CI is a real interval and still clears the threshold
        base = first + i
        ratio = args.first_pair_ratio if args.first_pair_ratio and i == 0 and first == 100.0 else args.ratio
        arms = [("baseline", base), ("candidate", base * ratio * (1 + 0.01 * (i % 2)))]
        # A B B A, the other way round every other launch, as kit.pairs runs the arms: a bench whose samples came
        # baseline first in every pair would not be decided
        for k, (arm, value) in enumerate(arms if (i + int(first // 100)) % 2 == 0 else arms[::-1]):
            if k == 1:
                mid = os.environ.get("TINY_LEVER_HOLD_MID") if i == 0 and first == 200.0 else None
                while mid and not os.path.exists(mid):  # half a pair in: what a live view sees most of the time
                    time.sleep(0.01)
            emit(event="sample", arm=arm, metric=args.metric, value=value, unit="items/s", higher_is_better=True,
                 pair=i)
        emit(event="progress", done=i + 1, total=pairs, msg=f"pair {i + 1}")
        hold = os.environ.get("TINY_LEVER_HOLD")
        if os.environ.get("TINY_LEVER_HOLD_PASS", os.environ.get("OPTSEQ_PASS")) != os.environ.get("OPTSEQ_PASS"):
            hold = None  # held in that pass only
        while hold and not os.path.exists(hold):  # held at a known point until the test lets it go
            time.sleep(0.01)
        time.sleep(args.pause)
    for spec in args.quality:
        name, value, limit = spec.replace("=", ":").split(":")
        emit(event="quality", name=name, value=float(value), limit=float(limit))
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
