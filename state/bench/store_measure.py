"""Timing a built store: each command as fresh processes of the real CLI, the RSS of `status`, in-process writes."""
from __future__ import annotations

import contextlib
import io
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optseq.state.bench.store_build import BenchError, Built

ROOT = Path(__file__).resolve().parents[2]
"""The repo (or the installed optseq package): where configs/ lies."""
CLI = (sys.executable, "-m", "optseq.console.cli")
"""The CLI as the installed `optseq` script runs it (same entry point, same interpreter)."""

@dataclass
class Row:
    runs: int
    build_s: float
    dir_bytes: int
    dir_files: int
    db_bytes: int | None
    """The TinyDB file's size (None if the store has none)."""
    status_s: float
    fact_s: float
    decide_s: float
    runs_json_s: float
    """The whole of `runs --json`."""
    export_s: float
    status_rss: int
    """Bytes: the peak RSS of one more `status --json` process."""
    set_fact_s: float
    """In-process `seq.actions.set_fact` on a Sequencer already open (machine, levers snapshot, store write)."""
    append_s: float
    """In-process `Store.append("facts", …)` on a Store already open: the store's own write."""
    runs_first_s: float = 0.0
    """`runs --json` from its start to its first run's record whole on stdout (the same processes)."""
    runs_lever_s: float = 0.0
    """The whole of `runs option_b --json` (one lever's runs, decisions and events)."""
    runs_rss: int = 0
    """Bytes: the peak RSS of one more `runs --json` process."""
    check: Check | None = None
    """The schema check's cost (`schema_check`)."""


@dataclass
class Check:
    """What checking every record against the store's schema (state/store/shapes.py) costs, in-process, beside
    the parse it follows; medians of passes over the same bytes."""
    lines: int
    """Journal lines, every journal."""
    hot_s: float
    """The hot file's schema check (`shape_check.hot_problem` on the file as parsed): every open pays it."""
    loads_s: float
    """Every journal line parsed by json.loads: the parse before msgspec."""
    decode_s: float
    """Every journal line parsed as the store parses it now (`shape_check.loads`: msgspec's decoder)."""
    check_s: float
    """Every journal line's schema check (`shape_check.line_problem`), after its parse."""


WRITES = 9
"""In-process writes timed per store, after one not counted: cheap, and a write's time swings with the disk's flush."""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_DB", "OPTSEQ_PLAN")}


def _start(argv: list[str], stdout: Any, stderr: Any) -> subprocess.Popen:
    """A timed command in a process group of its own (the RSS probe's command in it too). No preexec_fn: it would
    make Python fork this process, whole stores in memory, instead of vfork, and that copy would be in every time."""
    return subprocess.Popen(argv, cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            start_new_session=True)


@contextlib.contextmanager
def _ended(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The command's whole group killed where the bench stops before it ends (Ctrl-C, or SIGTERM and SIGHUP,
    which main turns into KeyboardInterrupt): a 100,000-run `runs --json` is minutes of work nobody reads."""
    try:
        yield proc
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def child(argv: list[str], *, stdout: Any = subprocess.DEVNULL) -> float:
    """Run one process to its end and return its wall seconds; BenchError if it fails."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        with _ended(_start(argv, stdout, err)) as proc:
            proc.wait()
        elapsed = time.perf_counter() - t0
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-3:]
            raise BenchError(f"{' '.join(argv[2:])} exited {proc.returncode}: {' | '.join(tail)}")
    return elapsed


# A child's ru_maxrss starts from its parent's resident set (fork copies it; with vfork, exec records the
# parent's high-water mark), and this process holds whole stores. So the RSS is taken by a small python
# that spawns the command and reads that one child's rusage with wait4: its own ~10 MB is the floor.
_RSS_PROBE = ("import os, sys\n"
              "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)\n"
              "_, status, usage = os.wait4(pid, 0)\n"
              "open(sys.argv[1], 'w').write(str(usage.ru_maxrss * (1 if sys.platform == 'darwin' else 1024)))\n"
              "sys.exit(os.waitstatus_to_exitcode(status))\n")


FIRST_END = b"\n    }"
"""Where `runs --json`'s first record ends: its closing brace, at the records' indent."""


def streamed(argv: list[str]) -> tuple[float, float]:
    """Run a command that writes JSON records; (seconds to its first record's end on stdout, seconds to its end)."""
    t0 = time.perf_counter()
    first, seen = None, b""
    with tempfile.TemporaryFile() as err:
        with _ended(_start(argv, subprocess.PIPE, err)) as proc:
            stream = proc.stdout
            assert isinstance(stream, io.BufferedReader)  # stdout=PIPE, buffered: read1 returns what one read gives
            while chunk := stream.read1(1 << 16):
                if first is None:
                    seen = seen[-len(FIRST_END):] + chunk
                    if FIRST_END in seen:
                        first = time.perf_counter() - t0
            code = proc.wait()
        elapsed = time.perf_counter() - t0
        if code != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-3:]
            raise BenchError(f"{' '.join(argv[2:])} exited {code}: {' | '.join(tail)}")
    return (elapsed if first is None else first), elapsed


def peak_rss(argv: list[str]) -> int:
    """The peak resident set of one run of `argv`, in bytes (see _RSS_PROBE)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rss"
        child([sys.executable, "-c", _RSS_PROBE, str(out), *argv])
        return int(out.read_text())


def startup(repeat: int) -> float:
    """Median wall time of `python -m optseq.console.cli --help`: the interpreter and the CLI module, nothing else."""
    return statistics.median(child([*CLI, "--help"]) for _ in range(repeat))


def schema_check(db: Path, repeat: int) -> Check:
    """The schema check's cost on the store at `db` (see Check): `repeat` passes over every journal, each line
    parsed by json.loads and by msgspec and checked, side by side in the same pass; the hot file's check
    WRITES + 1 times. A record of the wrong shape is a BenchError: the bench builds sound stores."""
    import json

    from optseq.state.store import integrity, layout, shape_check as shapes

    data = json.loads((db / layout.DB_NAME).read_bytes())
    version = data[layout.META][str(layout.META_ID)]["schema_version"]
    hot = []
    for _ in range(WRITES + 1):
        t0 = time.perf_counter()
        problem = shapes.hot_problem(data, version)
        hot.append(time.perf_counter() - t0)
        if problem:
            raise BenchError(f"{db / layout.DB_NAME}: {problem}")
    passes: list[tuple[float, float, float]] = []
    lines = 0
    for _ in range(repeat):
        loads = decode = check = 0.0
        lines = 0
        for table in layout.HISTORY:
            path = db / layout.JOURNAL_DIR / f"{table}.jsonl"
            if not path.is_file():
                continue
            with open(path, "rb") as f:
                for text in f:
                    t0 = time.perf_counter()
                    json.loads(text)
                    t1 = time.perf_counter()
                    line = shapes.loads(text)
                    t2 = time.perf_counter()
                    problem = integrity.line_problem(line) or shapes.line_problem(table, line)
                    t3 = time.perf_counter()
                    loads, decode, check, lines = loads + t1 - t0, decode + t2 - t1, check + t3 - t2, lines + 1
                    if problem:
                        raise BenchError(f"{path}: {problem}")
        passes.append((loads, decode, check))
    med = [statistics.median(p[i] for p in passes) for i in range(3)]
    return Check(lines=lines, hot_s=statistics.median(hot[1:]), loads_s=med[0], decode_s=med[1], check_s=med[2])


def measure(plan_path: Path, db: Path, repeat: int, built: Built, scratch: Path) -> Row:
    """Time every command `repeat` times side by side on the store at `db`; medians."""
    from optseq.state.store import layout as store_layout
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.store import Store

    files = [p for p in db.rglob("*") if p.is_file()]
    dir_bytes = sum(p.stat().st_size for p in files)
    tinydb_file = db / getattr(store_layout, "DB_NAME", "optseq.json")
    db_bytes = tinydb_file.stat().st_size if tinydb_file.is_file() else None
    common = ["--plan", str(plan_path), "--db", str(db)]
    out = scratch / "export.md"
    times: dict[str, list[float]] = {k: [] for k in ("status", "fact", "decide", "runs", "first", "lever",
                                                      "export")}
    for i in range(repeat):
        times["status"].append(child([*CLI, "status", "--json", *common]))
        times["fact"].append(child([*CLI, "fact", "eval_dense", "true" if i % 2 == 0 else "false", *common]))
        times["decide"].append(child([*CLI, "decide", "amp", "defer", "--why", "store bench: a repeatable write",
                                      *common]))
        first, whole = streamed([*CLI, "runs", "--json", *common])
        times["first"].append(first)
        times["runs"].append(whole)
        times["lever"].append(child([*CLI, "runs", "option_b", "--json", *common]))
        times["export"].append(child([*CLI, "export", "-o", str(out), *common]))
    rss = peak_rss([*CLI, "status", "--json", *common])
    runs_rss = peak_rss([*CLI, "runs", "--json", *common])
    set_fact, append = [], []
    with Sequencer.open(plan_path, db, mode="write") as seq:
        for i in range(WRITES + 1):
            t0 = time.perf_counter()
            seq.actions.set_fact("eval_dense", i % 2 == 0)
            set_fact.append(time.perf_counter() - t0)
    with Store.open(db, mode="write") as store:
        for i in range(WRITES + 1):
            t0 = time.perf_counter()
            store.append("facts", {"name": "eval_dense", "value": i % 2 == 1})
            append.append(time.perf_counter() - t0)
    set_fact, append = set_fact[1:], append[1:]
    med = {k: statistics.median(v) for k, v in times.items()}
    return Row(runs=built.runs, build_s=built.seconds, dir_bytes=dir_bytes, dir_files=len(files),
               db_bytes=db_bytes, status_s=med["status"],
               fact_s=med["fact"], decide_s=med["decide"], runs_json_s=med["runs"], export_s=med["export"],
               status_rss=rss, set_fact_s=statistics.median(set_fact),
               append_s=statistics.median(append), runs_first_s=med["first"], runs_lever_s=med["lever"],
               runs_rss=runs_rss, check=schema_check(db, repeat))

