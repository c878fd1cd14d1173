"""A lever that reads stdin to the end: with stdin closed it gets EOF at once and reports what it read."""
import json
import sys

data = sys.stdin.read()
print(json.dumps({"event": "env", "stdin": data}), flush=True)
print(json.dumps({"event": "done"}), flush=True)
