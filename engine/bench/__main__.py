"""`python -m engine.bench LEVER [--size ci|gpu] [--repeats N] [--warmup N]`."""
from __future__ import annotations

import argparse
import importlib
import sys

from engine.bench import protocol

# lever id -> module under engine.bench exposing run(args, infra) -> None
LEVERS = {
    "cython_bot": "cython_bot",
    "option_b": "option_b",
    "option_a": "option_a",
    "amp": "amp",
    "compile": "compile",
    "tensorrt": "tensorrt",
    "model_size": "model_size",
}


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m engine.bench", description=__doc__)
    p.add_argument("lever", choices=sorted(LEVERS))
    p.add_argument("--size", choices=["ci", "gpu"], default="ci")
    p.add_argument("--repeats", type=int, default=None, help="A/B pairs (default depends on lever and size)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up pairs before measuring")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    protocol.watch_parent()
    module = importlib.import_module(f"engine.bench.{LEVERS[args.lever]}")
    from engine.bench.envinfo import env_facts  # torch import happens here, in the child only

    protocol.emit("env", **env_facts(args.device))
    try:
        module.run(args, protocol.infra())
    except protocol.Unavailable as exc:
        protocol.unavailable(str(exc))
    protocol.done()
    return 0


if __name__ == "__main__":
    sys.exit(main())
