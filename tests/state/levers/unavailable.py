"""A lever that cannot run here: reports unavailable, then done and exit 0 (or exit CODE when given)."""
import json
import sys

print("probing for CUDA", flush=True)
print(json.dumps({"event": "unavailable", "reason": "no CUDA device"}), flush=True)
print(json.dumps({"event": "done"}), flush=True)
sys.exit(int(sys.argv[1]) if sys.argv[1:] else 0)
