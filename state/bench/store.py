"""Store bench: how `status`, a write, `runs --json` and `export` cost as the store's history grows.

`python -m optseq.state.bench.store [--runs 100,10000,100000] [--repeat N] [--write docs/performance.md] [--keep DIR | --reuse DIR]`

For each size N it builds a fresh store of N real-shaped lever runs on the default plan through the real
API (`store_build.build_store`: `Sequencer.open`, its writer's `append`/`run_ended`/`fire_points`, its actions'
`decide_in_batch`/`mark_stack_changes`, `Store.update`/`run_dir`, in the shapes `optseq.state.runs.lever_run` writes), then runs each
command as a fresh process of the real CLI (`python -m optseq.console.cli … --plan … --db …`), `--repeat` times
side by side, and reports medians: the process times, the peak RSS of `status`, and the in-process time of
one write through a Sequencer (and a Store) already open, apart from process start-up, whose baseline
(`--help`) is given too. No engine and no torch: the samples are drawn here and judged by the real pass
loop and decision rule (`optseq.state.runs.passes.ABPasses`).

The write that is timed is `fact eval_dense true|false` (alternating) and `decide amp defer --why …`:
`record julia_port …` cannot be repeated once the Julia gate is decided, and both of these can, on every
store this builds (amp waits on model_size, which is never decided here, and a blocked lever may be
decided by hand).

This module is the command; the building is in `store_build`, the timing in `store_measure`, the
section of docs/performance.md in `store_doc`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import signal
import sys
import tempfile
from pathlib import Path

from optseq.state.bench.store_build import GROUP, Built, build_store
from optseq.state.bench.store_doc import fmt_s, machine, render, write_section
from optseq.state.bench.store_measure import ROOT, measure, startup

DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
SIZES = (100, 10_000, 100_000)
REPEAT = 5


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma list of run counts, e.g. 100,1000,10000") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every run count must be at least 1")
    return sizes


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    """SIGTERM and SIGHUP stop it as Ctrl-C does: the command it was timing is killed with its group
    (store_measure._ended), a store it was building is left as its last write left it, and nothing is written."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupted)
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        print(f"store bench: stopped ({exc or 'SIGINT'}): nothing written", file=sys.stderr, flush=True)
        return 130


def _main(argv: list[str] | None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.store", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=_sizes, default=SIZES, metavar="N,N,…",
                   help=f"store sizes in runs (default {','.join(map(str, SIZES))})")
    p.add_argument("--repeat", type=int, default=REPEAT, help=f"processes per command and size (default {REPEAT})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help="plan to build on (default configs/sequencing.toml)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="build the stores in DIR/runs-N and keep them (default: a temporary directory)")
    p.add_argument("--reuse", type=Path, default=None, metavar="DIR",
                   help="time the stores an earlier --keep DIR built (DIR/runs-N) instead of building them again; "
                        "the build column then says so")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error(f"--repeat {args.repeat}: needs at least one")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        p.error(f"--keep {args.keep}: not empty; give a new or empty directory")
    if args.reuse is not None and args.keep is not None:
        p.error("--reuse and --keep: give one (--reuse times stores kept earlier, --keep builds and keeps them)")
    for n in args.runs if args.reuse is not None else ():
        if not (args.reuse / f"runs-{n}" / "optseq.json").is_file():
            p.error(f"--reuse {args.reuse}: no store of {n} runs there (runs-{n}/optseq.json); build it with --keep")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    startup_s = startup(args.repeat)
    say(f"start-up baseline (--help): {fmt_s(startup_s)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="optseq-store-bench-") as tmp:
        home = (args.keep or Path(tmp)).resolve()  # the commands run from the repository root
        for n in args.runs:
            db = home / f"runs-{n}"
            step = max(GROUP, (n // 10) // GROUP * GROUP)

            def progress(done: int, total: int, _step=step) -> None:
                if done % _step == 0 or done == total:
                    say(f"  building {total:,} runs: {done:,}")

            if args.reuse is not None:
                db = args.reuse.resolve() / f"runs-{n}"
                built = Built(runs=n, seconds=math.nan)  # the timed commands' few writes since are part of it
                say(f"reusing the {n:,}-run store in {db}")
            else:
                built = build_store(args.plan, db, n, progress=progress)
                say(f"built {n:,} runs in {fmt_s(built.seconds)} ({built.decisions} decisions, events {built.events})")
            rows.append(measure(args.plan.resolve(), db, args.repeat, built, Path(tmp)))
            say(f"timed {n:,} runs: status {fmt_s(rows[-1].status_s)}")
    command = "python -m optseq.state.bench.store" + (
        f" --runs {','.join(map(str, args.runs))}" if tuple(args.runs) != SIZES else "") + (
        f" --repeat {args.repeat}" if args.repeat != REPEAT else "") + (
        f" --reuse {args.reuse}" if args.reuse is not None else "") + (f" --write {args.write}" if args.write else "")
    section = render(rows, command=command, repeat=args.repeat, startup_s=startup_s, about=machine(), when=when)
    if args.write:
        write_section(args.write, section)
        print(f"wrote {args.write}")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
