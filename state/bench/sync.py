"""Sync bench: what `optseq sync` costs beside a bare `git fetch` of the same refs, and `status` after each merge.

`python -m optseq.state.bench.sync [--runs 100,10000] [--repeat N] [--first N] [--stores DIR]
[--write docs/performance.md]`

For each size N: store A is built as the store bench builds its stores (`store_build.build_store`, N real-shaped
lever runs through the real API; with `--stores DIR`, built once into DIR/runs-N and kept there, and a copy of its
hot file and journals taken in each later run: a 100,000-run build takes a quarter of an hour) and pushes its whole
history to a new bare repository (`git init --bare`, reached as a `file://` URL) with `optseq sync`. Then, each
command a fresh process of the real CLI (`python -m optseq.console.cli sync URL --plan … --db …`), side by side:
`--first` passes (default `--repeat`) of
  first sync    an empty store B syncs the whole history; beside it, the floor: `git fetch` of the same refs
                (`refs/optseq/writers/*`) into an empty bare repository; then `status --json` in B;
and `--repeat` passes of
  incremental   A records one more run (through the same builder, not timed) and syncs it; B syncs it in; the
                floor: `git fetch` of the same refs into the floor's repository, one run behind as B was; then
                `status --json` in B.
What bounds the incremental sync beside the fetch is measured in each of its passes too (`Startup`): the
interpreter's start (`python -c pass`), the import of the modules an incremental sync runs, and the CLI's `--help`.
optseq's own time in a sync is its wall time less the time of the git commands it ran, which git reports itself:
each sync runs with GIT_TRACE2_EVENT naming a directory, and every git process it started (a trace whose session
id has no parent) says its own elapsed time at its exit. Python's start-up is optseq's own time here.

This module is the command and the timing; the section of docs/performance.md is in `sync_doc`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from optseq.state.bench.store import DEFAULT_PLAN, _sizes
from optseq.state.bench.store_build import BenchError, build_store
from optseq.state.bench.store_doc import fmt_s, machine
from optseq.state.bench.store_measure import CLI, ROOT
from optseq.state.bench.sync_doc import IMPORTS, render, write_section
from optseq.state.code import git
from optseq.state.sync.conflicts import KEPT
from optseq.state.sync.notes import kept

SIZES = (100, 10_000)
REPEAT = 3
REFS = "+refs/optseq/writers/*:refs/optseq/writers/*"
"""What the floor fetches: the refs a sync fetches (state/sync/gitrefs.py), and nothing else."""


@dataclass
class Timed:
    wall_s: float
    git_s: float = 0.0
    """The git commands' own elapsed time, from their trace2 exit events (0 for a bare git command)."""

    @property
    def own_s(self) -> float:
        return self.wall_s - self.git_s


@dataclass
class Startup:
    """Fresh processes that do less than a sync (medians): what no sync of optseq's can take less than."""
    python_s: float
    """`python -c pass`: the interpreter alone."""
    imports_s: float
    """`python -c "import …"`: the interpreter and the modules an incremental sync runs (IMPORTS)."""
    cli_s: float
    """`python -m optseq.console.cli --help`: the interpreter and the CLI's entry."""


@dataclass
class Row:
    runs: int
    records: int
    build_s: float
    """The build of A's N runs (for a store kept with `--stores`, the build it took then)."""
    push_s: float
    """A's first sync: its whole history pushed (one pass)."""
    first: Timed
    first_fetch_s: float
    first_status_s: float
    push_one_s: float
    """A's sync of its one new run (median)."""
    inc: Timed
    inc_fetch_s: float
    inc_status_s: float
    startup: Startup | None = None
    """Measured in the incremental passes, beside the syncs."""


def _env(trace: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_DB", "OPTSEQ_PLAN", "GIT_TRACE2_EVENT")}
    env["OPTSEQ_WRITER"] = "bench"
    if trace is not None:
        env["GIT_TRACE2_EVENT"] = str(trace)
    return env


def run(argv: list[str], trace: Path | None = None) -> Timed:
    """One process to its end: its wall time, and with `trace` (a new directory) its git commands' time."""
    if trace is not None:
        trace.mkdir(parents=True)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=_env(trace), stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise BenchError(f"{' '.join(map(str, argv[2:5]))} … exited {proc.returncode}: {' | '.join(tail)}")
    return Timed(wall, git_time(trace) if trace is not None else 0.0)


def git_time(trace: Path) -> float:
    """The summed elapsed time of the git processes started by something other than git (trace2 `exit` events)."""
    total = 0.0
    for path in trace.iterdir():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "exit" and "/" not in str(event.get("sid", "/")):
                total += float(event.get("t_abs") or 0.0)
    return total


def records(db: Path) -> int:
    """The store's records: the ids its history tables handed out (each insert takes the next, none is removed),
    read from the hot file: folding a million journal lines of each store to count them took minutes."""
    from optseq.state.store.store import Store

    with Store.open(db, mode="read") as store:
        ids = store.meta().ids
        # less a store's note of its own writer (state/sync/recover.py): bookkeeping, never pushed; the sync's
        # document says whether it was written, so no journal is folded to find it
        state = kept(store, KEPT)
        own = 1 if state is not None and state.journaled else 0
        return sum(ids.get(t, 0) for t in ("runs", "decisions", "events", "criteria", "facts")) - own


BUILT = "built.json"
"""In a kept store's folder (`--stores`): written once its build has finished, with the build's seconds."""


STARTS = {"python_s": [sys.executable, "-c", "pass"],
          "imports_s": [sys.executable, "-c", "import " + ", ".join(IMPORTS)], "cli_s": [*CLI, "--help"]}
"""The processes of `Startup`, each run once in each incremental pass, beside the sync they bound."""


def store_a(plan: Path, a: Path, n: int, stores: Path | None, say) -> float:
    """Store A of `n` built runs at `a`: built there, or with `stores`, copied from the one kept in stores/runs-N
    (built and kept there first when there is none; one whose build is under way there, with no BUILT file yet, is
    waited for). Returns the build's seconds (the kept store's, as its BUILT file says)."""
    if stores is None:
        built = build_store(plan, a, n)
        say(f"built {n:,} runs in {fmt_s(built.seconds)}")
        return built.seconds
    kept = stores / f"runs-{n}"
    done = kept / BUILT
    if not kept.exists():
        built = build_store(plan, kept, n)
        done.write_text(json.dumps({"runs": n, "seconds": built.seconds}), encoding="utf-8")
        say(f"built {n:,} runs in {fmt_s(built.seconds)} (kept in {kept})")
    elif not done.is_file():
        say(f"waiting for the build of {n:,} runs under way in {kept} (its {BUILT})")
        while not done.is_file():
            time.sleep(5)
    seconds = float(json.loads(done.read_text(encoding="utf-8"))["seconds"])
    say(f"copying the {n:,}-run store kept in {kept} (built in {fmt_s(seconds)})")
    a.mkdir()  # the history a sync reads: the hot file and the journals (the runs' logs are never pushed)
    shutil.copy2(kept / "optseq.json", a / "optseq.json")
    shutil.copytree(kept / "journal", a / "journal")
    return seconds


def measure(plan: Path, home: Path, n: int, repeat: int, say, first_passes: int | None = None,
            stores: Path | None = None) -> Row:
    a, remote = home / "A", home / "remote.git"
    git.git(home, "init", "--bare", "--quiet", str(remote))
    url = remote.as_uri()
    build_s = store_a(plan, a, n, stores, say)
    first_passes = repeat if first_passes is None else first_passes

    def sync(db: Path, name: str) -> Timed:
        return run([*CLI, "sync", url, "--plan", str(plan), "--db", str(db)], home / "traces" / name)

    def status(db: Path) -> float:
        return run([*CLI, "status", "--json", "--plan", str(plan), "--db", str(db)]).wall_s

    def fetch(bare: Path) -> float:
        if not bare.exists():
            git.git(home, "init", "--bare", "--quiet", str(bare))
        # the floor a sync is measured against: git's own fetch, timed as a child as the sync is, not through git.py
        return run(["git", "-C", str(bare), "fetch", "--quiet", "--no-tags", "--", url, REFS]).wall_s

    push_s = sync(a, "push").wall_s
    say(f"pushed {n:,} runs in {fmt_s(push_s)}")
    first, first_fetch, first_status = [], [], []
    for i in range(first_passes):
        b = home / f"B{i}"
        first.append(sync(b, f"first{i}"))
        first_fetch.append(fetch(home / f"floor{i}.git"))
        first_status.append(status(b))
        say(f"  first sync {i + 1}/{first_passes}: {fmt_s(first[-1].wall_s)} (git {fmt_s(first[-1].git_s)}), "
            f"git fetch {fmt_s(first_fetch[-1])}, status {fmt_s(first_status[-1])}")
        if i:  # the stores that are not synced on are not needed: the disk is shared
            shutil.rmtree(home / f"B{i - 1}")
            shutil.rmtree(home / f"floor{i - 1}.git")
    b, floor = home / f"B{first_passes - 1}", home / f"floor{first_passes - 1}.git"
    push_one, inc, inc_fetch, inc_status = [], [], [], []
    starts: dict[str, list[float]] = {name: [] for name in STARTS}
    for i in range(repeat):
        build_store(plan, a, 1, more=True)
        push_one.append(sync(a, f"push{i}").wall_s)
        inc.append(sync(b, f"inc{i}"))
        inc_fetch.append(fetch(floor))
        inc_status.append(status(b))
        for name, argv in STARTS.items():
            starts[name].append(run(argv).wall_s)
        say(f"  incremental sync {i + 1}/{repeat}: {fmt_s(inc[-1].wall_s)} (git {fmt_s(inc[-1].git_s)}), "
            f"git fetch {fmt_s(inc_fetch[-1])}, status {fmt_s(inc_status[-1])}")
    in_a, in_b = records(a), records(b)
    if in_a != in_b:
        raise BenchError(f"{n:,} runs: store B holds {in_b:,} records after its syncs, A {in_a:,}")
    med = statistics.median
    return Row(runs=n, records=in_a, build_s=build_s, push_s=push_s,
               first=Timed(med(t.wall_s for t in first), med(t.git_s for t in first)),
               first_fetch_s=med(first_fetch), first_status_s=med(first_status), push_one_s=med(push_one),
               inc=Timed(med(t.wall_s for t in inc), med(t.git_s for t in inc)), inc_fetch_s=med(inc_fetch),
               inc_status_s=med(inc_status), startup=Startup(**{name: med(t) for name, t in starts.items()}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.sync", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=_sizes, default=SIZES, metavar="N,N,…",
                   help=f"history sizes in runs (default {','.join(map(str, SIZES))})")
    p.add_argument("--repeat", type=int, default=REPEAT, help=f"passes per size (default {REPEAT})")
    p.add_argument("--first", type=int, default=None, metavar="N",
                   help="passes of the first sync per size (default: --repeat; at 100,000 runs each takes minutes)")
    p.add_argument("--stores", type=Path, default=None, metavar="DIR",
                   help="keep each size's built store A in DIR/runs-N, and copy it from there when it is there")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help="plan to build on (default configs/sequencing.toml)")
    args = p.parse_args(argv)
    if args.repeat < 1 or (args.first is not None and args.first < 1):
        p.error(f"--repeat {args.repeat}, --first {args.first}: each needs at least one pass")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    rows = []
    stores = args.stores.resolve() if args.stores is not None else None
    try:
        for n in args.runs:
            with tempfile.TemporaryDirectory(prefix="optseq-sync-bench-") as tmp:
                rows.append(measure(args.plan.resolve(), Path(tmp).resolve(), n, args.repeat, say, args.first, stores))
    except BenchError as e:
        print(f"sync bench: {e}", file=sys.stderr)
        return 1
    load = max(load, os.getloadavg()[0])
    command = "python -m optseq.state.bench.sync" + (
        f" --runs {','.join(map(str, args.runs))}" if tuple(args.runs) != SIZES else "") + (
        f" --repeat {args.repeat}" if args.repeat != REPEAT else "") + (
        f" --first {args.first}" if args.first is not None else "") + (
        f" --stores {args.stores}" if args.stores is not None else "") + (
        f" --write {args.write}" if args.write else "")
    first = args.repeat if args.first is None else args.first
    section = render(rows, command=command, repeat=args.repeat, first=first,
                     about=f"{machine()}; load average {load:.1f} (1 min, the most seen at its start and end)",
                     when=when)
    if args.write:
        write_section(args.write, section)
        print(f"wrote {args.write}")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
