"""The demo team's benchmark: sums a list in chunks, REPS times over, and prints its throughput and a checksum.

`make_repo.py` commits this file as it is on `main`, and on its branches the changes a team would make: `builtin-sum`
sums each chunk with sum() instead of a Python loop, `tidy` only tidies the code.
"""
import time

N, REPS, CHUNK = 200_000, 5, 64


def total(data: list[int]) -> int:
    s = 0
    for i in range(0, len(data), CHUNK):
        for x in data[i:i + CHUNK]:
            s += x
    return s


def main() -> None:
    data = list(range(N))
    start = time.perf_counter()
    for _ in range(REPS):
        checksum = total(data)
    elapsed = time.perf_counter() - start
    print(f"items/s: {N * REPS / elapsed:.1f}")
    print(f"checksum: {checksum % 1_000_003}")


if __name__ == "__main__":
    main()
