"""`python -m optseq.state.bench.launch [--launches N] [--write docs/performance.md]`: what a launch's shim costs.

Each local launch runs under a shim of its own (state/runners/shim.py, under `python -I -S`): this measures, side by
side in one run and in turn, one launch of a lever started bare (Popen in its own session, its output read to
the end, waited for: what optseq did before the shim) and the same lever under its shim (started, its output
read, the shim's reports read to their end and the shim waited for), for a lever that costs nothing (`true`) and
a Python one (`python -c pass`); and the whole local launch as optseq runs it (Launcher.run, its transcript
included). The shim's own interpreter, with and without site, is measured beside them: why it runs `-I -S`.
Medians, their difference (the shim's cost per launch) and ratio, into this bench's section of the document.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from optseq.state.bench import perf_doc
from optseq.state.runners import groups
from optseq.state.runners.interface import RunSpec
from optseq.state.runners.local import Launcher
from optseq.state.runners.shim_link import ShimLink

SECTION = "launch"
COMMAND = "python -m optseq.state.bench.launch --write docs/performance.md"
LEVERS = {"true": ["true"], "python -c pass": [sys.executable, "-c", "pass"]}


def bare(argv: list[str]) -> None:
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=groups.die_with_parent())
    assert proc.stdout is not None
    proc.stdout.read()
    proc.wait()
    proc.stdout.close()


def shimmed(argv: list[str]) -> None:
    link = ShimLink.start(RunSpec(argv))
    os.set_blocking(link.out, True)
    while os.read(link.out, 65536):
        pass
    link.read_all()
    link.close()


def launched(argv: list[str]) -> None:
    Launcher(RunSpec(argv)).run()


def measure(launches: int) -> dict[str, list[float]]:
    ways: dict[str, Callable[[], None]] = {
        "python -I -S -c pass (the shim's interpreter)": partial(bare, [sys.executable, "-I", "-S", "-c", "pass"]),
        "python -c pass, with site": partial(bare, [sys.executable, "-c", "pass"]),
    }
    for name, argv in LEVERS.items():
        ways[f"{name}: bare"] = partial(bare, argv)
        ways[f"{name}: under its shim"] = partial(shimmed, argv)
        ways[f"{name}: Launcher.run"] = partial(launched, argv)
    found: dict[str, list[float]] = {name: [] for name in ways}
    order = list(ways)
    for i in range(launches):
        for name in order if i % 2 == 0 else order[::-1]:  # in turn, order alternated: one load for all
            start = time.perf_counter()
            ways[name]()
            found[name].append(time.perf_counter() - start)
        if (i + 1) % 10 == 0:
            print(f"{i + 1}/{launches} launches of each", file=sys.stderr, flush=True)
    return found


def render(found: dict[str, list[float]], command: str, load: tuple[float, float]) -> str:
    med = {name: statistics.median(times) * 1000 for name, times in found.items()}
    rows = [f"| {name} | {med[name]:.1f} ms |" for name in found if ":" not in name]
    table = []
    for lever in LEVERS:
        b, s, run = (med[f"{lever}: {way}"] for way in ("bare", "under its shim", "Launcher.run"))
        table.append(f"| `{lever}` | {b:.1f} ms | {s:.1f} ms | +{s - b:.1f} ms | {s / b:.2f}× | {run:.1f} ms |")
    n = len(next(iter(found.values())))
    return "\n".join([
        f"<!-- section:{SECTION} -->", "## A launch's shim", "",
        f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {perf_doc.cpu_name()} "
        f"({os.cpu_count()} cores), Python {platform.python_version()}, Linux {platform.release()}; load "
        f"{load[0]:.1f} at its start, {load[1]:.1f} at its end. Each local launch runs under a shim of its own "
        "(state/runners/shim.py), its lever's child subreaper. One launch each way, in turn, order alternated, "
        f"{n} times; medians:", "",
        "| lever | bare | under its shim | the shim adds | ratio | Launcher.run |",
        "| --- | --- | --- | --- | --- | --- |", *table, "",
        "Bare: Popen in a session of its own, output read to its end, waited for (optseq's launch before the shim). "
        "Under its shim: the shim started, the lever's output read, the shim's reports read to their end and the "
        "shim waited for. Launcher.run: the whole local launch, its transcript and callbacks included. The shim "
        "runs `python -I -S` (the standard library only): its interpreter beside one with site, as optseq's "
        "venv has it:", "",
        "| interpreter | median |", "| --- | --- |", *rows, "",
        "Beyond its interpreter, the shim costs its imports (ctypes for prctl, signal) and its looks at /proc once "
        "the lever has ended. A lever's launch is a benchmark of seconds (a Python ML bench's imports alone take "
        "longer than this), so the shim stays plain Python: a C one would save tens of milliseconds per launch.",
        f"<!-- /section:{SECTION} -->"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.launch", description=__doc__.split("\n\n")[0])
    p.add_argument("--launches", type=int, default=40, help="launches of each way (default 40)")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the section into this document")
    args = p.parse_args(argv)
    if args.launches < 1:
        p.exit(2, f"optseq.state.bench.launch: --launches {args.launches}: must be at least 1\n")
    command = ("python -m optseq.state.bench.launch" + (f" --launches {args.launches}" if args.launches != 40 else "")
               + (f" --write {args.write}" if args.write else ""))
    before = os.getloadavg()[0]
    found = measure(args.launches)
    section = render(found, command, (before, os.getloadavg()[0]))
    print(section)
    if args.write:
        perf_doc.write_section(args.write, section, SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
