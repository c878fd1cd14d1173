"""A lever whose output is mostly not protocol: garbage, half-written JSON, a 1 MB line, invalid UTF-8, bad events."""
import json
import sys

out = sys.stdout.buffer
lines = [
    b"plain text",
    b'{"event": "sample", "arm": "baseline", "val',            # half-written
    b'["event", "done"]',                                        # a JSON list
    b'{"no_event": 1}',                                          # an object without "event"
    b'{"event": 5}',                                             # "event" not a string
    b"\xff\xfe not utf-8 \xc3\x28",
    b'{"event": "sample", "arm": "baseline", "metric": "s", "value": "fast", "unit": "s", "pair": 0}',
    b'{"event": "sample", "arm": "baseline", "metric": "s", "value": NaN, "unit": "s", "pair": 0}',
    b'{"event": "env", "deep": ' + b"[" * 100000,             # nesting deep enough to break a parser
    b"x" * 1_000_000,
    b'{"event": "progress", "done": 1, "total": 1, "msg": "' + b"y" * 1_000_000 + b'"}',
]
for line in lines:
    out.write(line + b"\n")
    out.flush()
out.write(json.dumps({"event": "sample", "arm": "baseline", "metric": "s", "value": 2.0, "unit": "s",
                      "higher_is_better": False, "pair": 0}).encode() + b"\n")
out.write(b'{"event": "done"}')                                  # last line, no newline
out.flush()
