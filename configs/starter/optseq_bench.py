"""A stand-in benchmark for the starter plan that `optseq init` wrote (optseq.toml, next to this file).

Replace it with your own: any command that prints its number will do. optseq runs the plan's workload
command twice per pair, once per arm, the candidate with the lever's flags, and reads each number from the
output:

    items/s: 61234567.8                                  <- the metric (the plan's regex reads it)
    checksum: 1249975000                                 <- a quality number both arms must agree on (a guard)
    {"items_per_s": 61234567.8, "checksum": 1249975000}  <- the same two as JSON (for `json = "items_per_s"`)

The work: sum N numbers, in one of four ways chosen by two flags:
    --sum=loop|builtin   a Python for loop, or the builtin sum()      (the fast_sum lever: --sum=builtin)
    --copy=1|0           a defensive per-item copy of the input first (the no_copy lever: --copy=0)
--n=N sets N (default 50000). It imports nothing from optseq: a plain script, as yours will be.
"""
import json
import sys
import time

ROUNDS = 25
"""The best of this many timings. Each is a millisecond or two, so on a busy machine (other processes
taking turns on every core) some of them still run uninterrupted, and the best is the code's own speed."""


def flags(argv: list[str]) -> dict[str, str]:
    """--key=value flags; anything else stops the script (a typo measured as the default would mislead)."""
    given = {"sum": "loop", "copy": "1", "n": "50000"}
    for arg in argv:
        key, _, value = arg.removeprefix("--").partition("=")
        valid = {"sum": value in ("loop", "builtin"), "copy": value in ("0", "1"), "n": value.isdigit()}
        if not arg.startswith("--") or not valid.get(key):
            sys.exit(f"optseq_bench.py: bad argument {arg!r} (known: --sum=loop|builtin --copy=1|0 --n=N)")
        given[key] = value
    return given


def work(items: list[int], builtin_sum: bool, copy: bool) -> int:
    if copy:
        items = [x for x in items]  # the "defensive copy" the no_copy lever removes
    if builtin_sum:
        return sum(items)
    total = 0
    for x in items:
        total += x
    return total


def main() -> None:
    opts = flags(sys.argv[1:])
    n, builtin_sum, copy = int(opts["n"]), opts["sum"] == "builtin", opts["copy"] == "1"
    data = list(range(n))
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        checksum = work(data, builtin_sum, copy)
        best = min(best, time.perf_counter() - start)
    rate = n / best
    print(f"summed {n} numbers (sum: {opts['sum']}, copy first: {copy}) in {best * 1e3:.3f} ms, best of {ROUNDS}")
    print(f"items/s: {rate:.1f}")
    print(f"checksum: {checksum}")
    print(json.dumps({"items_per_s": round(rate, 1), "checksum": checksum}))


if __name__ == "__main__":
    main()
