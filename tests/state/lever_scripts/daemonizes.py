"""A stand-in lever that leaves a daemon behind: a child in a session of its own (setsid), outside the lever's
process group, that would outlive the run. It prints the daemon's pid, then measures and ends normally."""
import json
import os
import subprocess
import sys

daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"daemon pid {daemon.pid}", flush=True)
pairs = int(os.environ.get("OPTSEQ_REPEATS", "6"))
first = 100.0 * int(os.environ.get("OPTSEQ_PASS", "1"))
for i in range(pairs):
    arms = [("baseline", first + i), ("candidate", 1.5 * (first + i))]  # A B B A, as kit.pairs runs them
    for arm, value in arms if (i + int(os.environ.get("OPTSEQ_PASS", "1"))) % 2 == 1 else arms[::-1]:
        print(json.dumps({"event": "sample", "arm": arm, "metric": "items_per_s", "value": value,
                          "unit": "items/s", "higher_is_better": True, "pair": i}), flush=True)
print(json.dumps({"event": "done"}), flush=True)
