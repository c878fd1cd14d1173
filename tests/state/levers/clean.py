"""A well-behaved external lever: env, progress, paired samples, a guard, a criterion, log on both streams, done."""
import json
import os
import sys


def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


print("starting clean lever", flush=True)
emit("env", run_id=os.environ.get("OPTSEQ_RUN_ID"), device="cpu")
emit("progress", done=0, total=2, msg="warm-up")
emit("sample", arm="baseline", metric="it/s", value=10.0, unit="it/s", higher_is_better=True, pair=0)
emit("sample", arm="candidate", metric="it/s", value=12.5, unit="it/s", higher_is_better=True, pair=0)
print("a note on stderr", file=sys.stderr, flush=True)
emit("progress", done=1, total=1, msg="pair 1/1")
emit("quality", name="max_abs_error", value=0.0, limit=1e-6)
emit("criterion", candidate="flux", criterion="c1", outcome="pass", evidence="builds")
emit("env", device="cpu0", cores=2)
emit("done")
