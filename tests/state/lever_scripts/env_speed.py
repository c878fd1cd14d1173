"""A stand-in lever whose candidate is STEP_LEVER_RATIO times the baseline's speed (its environment sets it), so a
test can step a lever's true ratio between runs: per-launch offsets (sd 1%) and per-sample noise (1%) drawn from
the run and the pass, so every launch brings fresh numbers and two runs differ as real ones do."""
import json
import os
import random
import sys


def emit(**event):
    print(json.dumps(event), flush=True)


def main() -> int:
    ratio = float(os.environ["STEP_LEVER_RATIO"])
    pairs = int(os.environ.get("OPTSEQ_REPEATS", "5"))
    rng = random.Random(f"{os.environ.get('OPTSEQ_RUN_ID')}:{os.environ.get('OPTSEQ_PASS')}")
    emit(event="env", device="test-device", python=sys.version.split()[0], code_hash="env-speed")
    launch = rng.lognormvariate(0.0, 0.01)
    for i in range(pairs):
        base = 100.0 * (1 + rng.gauss(0.0, 0.01))
        cand = 100.0 * ratio * launch * (1 + rng.gauss(0.0, 0.01))
        arms = [("baseline", base), ("candidate", cand)]  # A B B A, as kit.pairs runs them
        for arm, value in arms if (i + int(os.environ.get("OPTSEQ_PASS", "1"))) % 2 == 1 else arms[::-1]:
            emit(event="sample", arm=arm, metric="items_per_s", value=value, unit="items/s", higher_is_better=True,
                 pair=i)
    emit(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
