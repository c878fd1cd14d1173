"""A lever that fails: some progress, then an uncaught exception (exit 1) or, with "signal", a SIGKILL of itself."""
import json
import os
import signal
import sys

print(json.dumps({"event": "progress", "done": 0, "total": 3, "msg": ""}), flush=True)
if sys.argv[1:] == ["signal"]:
    os.kill(os.getpid(), signal.SIGKILL)
raise RuntimeError("boom in the lever")
