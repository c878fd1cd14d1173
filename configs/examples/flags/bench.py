"""A small benchmark configured the way many are: by --key=value flags, one line of output per figure.

It sums a list of integers in chunks, REPS times over, and prints its throughput and a checksum. Three of its
flags are real knobs: the summing loop (`--impl`), the chunk size (`--chunk`) and a defensive copy of every
chunk (`--copy`). `plan.toml` beside it writes each knob as a change to one workload command, so an adopted
knob is in both arms of every lever measured after it.

    python bench.py --impl=builtin --chunk=4096 --copy=0
"""
import argparse
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--impl", choices=["loop", "builtin"], default="loop", help="a Python loop, or sum()")
    p.add_argument("--chunk", type=int, default=64, help="items summed per chunk")
    p.add_argument("--copy", type=int, choices=[0, 1], default=1, help="copy each chunk before summing it")
    p.add_argument("--n", type=int, default=100_000, help="items")
    p.add_argument("--reps", type=int, default=10, help="times over the whole list")
    args = p.parse_args()
    data = list(range(args.n))
    total = 0
    start = time.perf_counter()
    for _ in range(args.reps):
        for i in range(0, args.n, args.chunk):
            block = data[i:i + args.chunk]
            if args.copy:
                block = list(block)
            if args.impl == "builtin":
                total += sum(block)
            else:
                for x in block:
                    total += x
    elapsed = time.perf_counter() - start
    print(f"config: impl={args.impl} chunk={args.chunk} copy={args.copy}")
    print(f"items/s: {args.n * args.reps / elapsed:.1f}")
    print(f"checksum: {total % 1_000_003}")


if __name__ == "__main__":
    main()
