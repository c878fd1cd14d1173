"""A stand-in benchmark for the starter plan that `optseq init` wrote (optseq.toml, next to this file).

Replace it with your own: any command that prints its number will do. optseq runs the command twice per
pair, once per arm, with that arm's environment toggles set, and reads each number from the output:

    items/s: 61234567.8                                  <- fast_sum's metric (the plan's regex reads it)
    checksum: 44999850000                                <- a quality number both arms must agree on (a guard)
    {"items_per_s": 61234567.8, "checksum": 44999850000}  <- no_copy's metric (the last JSON line's key)

The work: sum N numbers, in one of four ways chosen by two environment toggles:
    BENCH_SUM=builtin   add with the builtin sum() instead of a Python for loop  (the fast_sum lever)
    BENCH_NO_COPY=1     skip the defensive per-item copy of the input first       (the no_copy lever)
BENCH_N sets N (default 300000). It imports nothing from optseq: a plain script, as yours will be.
"""
import json
import os
import time

N = int(os.environ.get("BENCH_N", "300000"))
BUILTIN_SUM = os.environ.get("BENCH_SUM") == "builtin"
NO_COPY = os.environ.get("BENCH_NO_COPY") == "1"

data = list(range(N))


def work(items: list[int]) -> int:
    if not NO_COPY:
        items = [x for x in items]  # the "defensive copy" the no_copy lever removes
    if BUILTIN_SUM:
        return sum(items)
    total = 0
    for x in items:
        total += x
    return total


best = float("inf")
for _ in range(3):  # best of three: one timing alone is at the mercy of whatever else the machine runs
    start = time.perf_counter()
    checksum = work(data)
    best = min(best, time.perf_counter() - start)

rate = N / best
print(f"summed {N} numbers (builtin sum: {BUILTIN_SUM}, copy first: {not NO_COPY}) in {best * 1e3:.2f} ms")
print(f"items/s: {rate:.1f}")
print(f"checksum: {checksum}")
print(json.dumps({"items_per_s": round(rate, 1), "checksum": checksum}))
