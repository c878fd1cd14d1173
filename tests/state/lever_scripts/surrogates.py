"""A stand-in lever whose output is valid JSON spelling lone surrogates (`\\ud800`) in every text field.

Such JSON parses, but its strings cannot be written as UTF-8; a lever built on a careless encoder
(or fed a mangled file name) prints exactly this. With --mode criteria it speaks for a decision lever.
"""
import argparse
import os
import sys


def say(line: str) -> None:
    # written by hand, not json.dumps: the escapes must reach optseq as `\ud800`, not as bytes
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="speedup", choices=["speedup", "criteria"])
    args = p.parse_args()
    say(r'{"event": "env", "gpu": "\ud800", "\udfff key": "x", "nested": {"list": ["\udc80", 1]}}')
    say(r'{"event": "progress", "done": 0, "total": 1, "msg": "warming \udbff up"}')
    say(r'{"not_an_event": "\ud800"}')  # JSON, but log
    sys.stdout.buffer.write(b"raw bytes \xff\xfe in a log line\n")
    sys.stdout.flush()
    if args.mode == "criteria":
        say(r'{"event": "criterion", "candidate": "torch_jl", "criterion": "c1", "outcome": "pass", '
            r'"evidence": "bench \ud800 host"}')
        say(r'{"event": "criterion", "candidate": "torch\udc00jl", "criterion": "c2", "outcome": "pass"}')
        say(r'{"event": "done"}')
        return 0
    repeats = int(os.environ.get("OPTSEQ_REPEATS", "6"))
    for i in range(repeats):
        jitter = 1 + 0.01 * (i % 3)
        arms = [("baseline", 100.0), ("candidate", 150.0)]  # A B B A, as kit.pairs runs them
        for arm, value in arms if (i + int(os.environ.get("OPTSEQ_PASS", "1"))) % 2 == 1 else arms[::-1]:
            say(r'{"event": "sample", "arm": "%s", "metric": "items_per_s", "value": %r, '
                r'"unit": "items/\ud800s", "higher_is_better": true, "pair": %d}' % (arm, value * jitter, i))
    say(r'{"event": "quality", "name": "max_err\udc00", "value": 0.0, "limit": 1.0}')
    say(r'{"event": "done"}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
