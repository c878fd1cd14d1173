"""`python -m optseq.engine.bench LEVER [--size ci|gpu] [--repeats N] [--warmup N]`.

`python -m optseq.engine.bench all [--size ci|gpu] [--write docs/performance.md]` runs every lever and writes the report.

`python -m optseq.engine.bench LEVER --write docs/performance.md` reruns one lever and replaces only its figures there.

`python -m optseq.engine.bench gpu-check [--write docs/performance.md] [--device cuda] [--budget-s N]` measures AMP and
compile at a small and a large model, then model_size, and writes its own section (`gpu-check --help`).

`python -m optseq.engine.bench iteration [--amp=bf16|off] [--compile=on|off] [--option-a=on|off] [--hidden=N]` times
one configuration of a Deep CFR iteration: a workload whose levers are its flags (`iteration --help`).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from optseq.engine import kit

# lever id -> module under optseq.engine.bench exposing run(args, infra) -> None
LEVERS = {
    "cython_bot": "cython_bot",
    "option_b": "option_b",
    "option_a": "option_a",
    "amp": "amp",
    "compile": "compile",
    "tensorrt": "tensorrt",
    "model_size": "model_size",
}

NO_TORCH = "torch is not installed (pip install torch: the engine extra)"
"""Why every built-in lever is unavailable on a light install: the reference workload (and env_facts) needs torch."""


def torch_missing() -> bool:
    """True where torch cannot be found: checked before any bench module loads, so no lever meets it mid-import."""
    return importlib.util.find_spec("torch") is None


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m optseq.engine.bench", description=__doc__)
    p.add_argument("lever", choices=sorted(LEVERS) + ["all"], help="a lever, or `all` for the report")
    p.add_argument("--size", choices=["ci", "gpu"], default="ci")
    p.add_argument("--repeats", type=int, default=None, help="A/B pairs (default depends on lever and size)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up pairs before measuring")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--write", default=None, metavar="PATH",
                   help="with `all`: write the markdown report here; with a lever: replace its figures there")
    args = p.parse_args(argv)
    # optseq asks for a number of pairs (first pass, or more when undecided) through the environment
    if args.repeats is None and os.environ.get("OPTSEQ_REPEATS", "").isdigit():
        args.repeats = int(os.environ["OPTSEQ_REPEATS"]) or None
    if args.warmup is None and os.environ.get("OPTSEQ_WARMUP", "").isdigit():
        args.warmup = int(os.environ["OPTSEQ_WARMUP"])
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gpu-check"]:
        if torch_missing():  # a report, not a lever run: one line on stderr
            print(f"unavailable: {NO_TORCH}", file=sys.stderr)
            return 1
        from optseq.engine.bench.gpu_check import main as gpu_check

        kit.watch_parent()
        return gpu_check(argv[1:])
    if argv[:1] == ["iteration"]:
        if torch_missing():  # a workload, not a lever run: one line on stderr
            print(f"unavailable: {NO_TORCH}", file=sys.stderr)
            return 1
        from optseq.engine.bench.iteration import main as iteration

        return iteration(argv[1:])
    args = parse(argv)
    kit.watch_parent()
    passed = [f"--{k}={v}" for k in ("repeats", "warmup", "device") if (v := getattr(args, k)) is not None]
    if args.write is not None and args.lever != "all":
        # the lever runs as a child, as under `all` (which reports a missing torch); this process writes
        from optseq.engine.bench.lever_report import write_lever

        return write_lever(args.lever, args.size, args.write, passed)
    if torch_missing():
        if args.lever == "all":  # a report, not a lever run: one line, and no report written
            print(f"unavailable: {NO_TORCH}", file=sys.stderr)
            return 1
        # a lever run: the run protocol's answer, so optseq records the lever as unavailable, not failed
        kit.unavailable(NO_TORCH)
        kit.done()
        return 0
    if args.lever == "all":
        from optseq.engine.bench.report import run_all

        return run_all(LEVERS, args.size, args.write, passed)
    module = importlib.import_module(f"optseq.engine.bench.{LEVERS[args.lever]}")
    from optseq.engine.bench.envinfo import env_facts  # torch import happens here, in the child only

    kit.emit("env", **env_facts(args.device), bench_size=args.size)  # optseq labels CI-size figures as such
    try:
        module.run(args, kit.infra())
    except kit.Unavailable as exc:
        kit.unavailable(str(exc))
    kit.done()
    return 0


if __name__ == "__main__":
    sys.exit(main())
