"""A lever that reports a sample and exits 0 without ever saying done."""
import json

print(json.dumps({"event": "sample", "arm": "baseline", "metric": "s", "value": 1.0, "unit": "s",
                  "higher_is_better": False, "pair": 0}), flush=True)
