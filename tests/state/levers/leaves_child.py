"""A lever that finishes cleanly but leaves a hanging child behind in its group."""
import json
import subprocess
import sys

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(json.dumps({"event": "env", "grandchild": child.pid}), flush=True)
print(json.dumps({"event": "done"}), flush=True)
