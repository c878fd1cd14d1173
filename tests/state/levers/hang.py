"""A lever that hangs; with "grandchild" it first starts a child of its own that hangs too (same group),
with "stubborn" a child that also ignores SIGTERM.

It says where it is with an env event: {"ready": true, "pid": ..., "grandchild": pid or null}.
"""
import json
import os
import subprocess
import sys
import time

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ok', flush=True); time.sleep(600)"

child = None
if sys.argv[1:] == ["grandchild"]:
    # It shares our stdout, so the runner's pipe stays open until the whole group is gone.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
elif sys.argv[1:] == ["stubborn"]:
    child = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    child.stdout.readline()  # its SIGTERM handler is in place
print(json.dumps({"event": "env", "ready": True, "pid": os.getpid(), "grandchild": child and child.pid}), flush=True)
while True:
    time.sleep(60)
