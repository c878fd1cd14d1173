"""Store bench: how `status`, a write, `runs --json` and `export` cost as the store's history grows.

`python -m optseq.state.bench.store [--runs 100,1000,10000] [--repeat N] [--write docs/performance.md] [--keep DIR]`

For each size N it builds a fresh store of N real-shaped lever runs on the default plan through the real
API (`build_store`: `Sequencer.open`, `Sequencer.append`/`run_ended`/`fire_points`/`decide_in_batch`/
`mark_stack_changes`, `Store.update`/`run_dir`, in the shapes `optseq.state.runs.lever_run` writes), then runs each
command as a fresh process of the real CLI (`python -m optseq.console.cli … --plan … --db …`), `--repeat` times
side by side, and reports medians: the process times, the peak RSS of `status`, and the in-process time of
one write through a Sequencer (and a Store) already open, apart from process start-up, whose baseline
(`--help`) is given too. No engine and no torch: the samples are drawn here and judged by the real pass
loop and decision rule (`optseq.state.runs.passes.ABPasses`).

The write that is timed is `fact eval_dense true|false` (alternating) and `decide amp defer --why …`:
`record julia_port …` cannot be repeated once the Julia gate is decided, and both of these can, on every
store this builds (amp waits on model_size, which is never decided here, and a blocked lever may be
decided by hand).
"""
from __future__ import annotations

import argparse
import datetime as dt
import inspect
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from optseq.state.bench import perf_doc

ROOT = Path(__file__).resolve().parents[2]
"""The repo (or the installed optseq package): where configs/ lies."""
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
SIZES = (100, 1000, 10000)
REPEAT = 5
SECTION = "store"
GROUP = 100
"""Runs per batch while building (one atomic store write per group instead of several per run)."""
LEVERS = ("cython_bot", "option_b", "option_a")
"""The levers the built history runs, in turn: the default plan's A/B levers that can be adopted or rejected
once the Julia gate is NO-GO and Option B's plan is written."""
CLI = (sys.executable, "-m", "optseq.console.cli")
"""The CLI as the installed `optseq` script runs it (same entry point, same interpreter)."""
TARGETS = {"status_s": 0.25, "write_store_s": 0.050, "export_s": 1.0, "rss_growth": 1.25}
"""Issue 9's targets at 10,000 runs; "RSS flat" is read as at most 1.25× the smallest store's RSS."""
TARGET_RUNS = 10000
MAKE_COMMAND = "python -m optseq.state.bench.store --write docs/performance.md"
"""What `make store-bench` runs; the section names the make target when it was written by it."""
MB = 1e6

# What a bench reports about itself (the `env` event of `python -m optseq.engine.bench`): the same on every run,
# so no run makes another stale by a device or torch change (as on one machine with one stack).
ENV = {"python": platform.python_version(), "torch": "2.13.0+cpu", "device": "cpu", "cpu": "store-bench CPU",
       "threads": 2, "code_hash": "5be1c0ffee5eed00", "bot_backend": "cython"}
BASELINES = {"cython_bot": (41_000.0, "calls/s"), "option_b": (860.0, "samples/s"),
             "option_a": (860.0, "samples/s")}
"""Baseline arm's throughput and unit per lever; the candidate is that times the drawn ratio."""


class BenchError(RuntimeError):
    """A command under test failed, or the document cannot take the section; str() is one line."""


# ---- building ------------------------------------------------------------------------------------------

@dataclass
class Built:
    runs: int
    seconds: float
    decisions: int = 0
    events: dict[str, int] = field(default_factory=dict)
    """Event records by type (stale, superseded, decision_point, plan)."""
    verdicts: dict[str, int] = field(default_factory=dict)


def build_store(plan_path: Path | str, db: Path | str, runs: int, *, group: int = GROUP, seed: int = 9,
                exact: bool = False, progress: Callable[[int, int], None] | None = None) -> Built:
    """Build a store of `runs` finished lever runs through the real API, as `lever_run.run_lever` writes them.

    Before the runs: `record julia_port torch_jl c4 fail` (the gate goes NO-GO automatically) and
    `plan option_b docs/plans/option_b.md`, so Option B and then Option A can run. Run k goes to the
    first runnable lever of LEVERS from k mod 3 on; each lever's runs alternate adopt and reject, and
    every tenth run overall straddles its threshold up to the rule's budget and stays inconclusive (a
    re-measure that takes a lever out of the stack, as real histories have). Two in three of a lever's runs
    need a second pass (one slow pair in the first), every fifth run repeats a sample (a pair-accounting
    warning): about 10 ratios and 20 sample lines a run.
    Per run, as `run_lever` does: a `runs` record appended as running, one update per pass as its
    command starts, samples appended to `runs/ID/samples.jsonl`, a log per pass, then the final update
    with status, summary (stats with every per-pair ratio, verdict, rule), fingerprint, env, warnings
    and pass_counts; the machine moved by `run_ended`; the automatic decision with its stats, and the
    derived events the decisions cause (stale, superseded), kept by the Sequencer as a real run's are.

    Batching is for building only: the runs of each group of `group` share one `seq.writing()` (one
    store.batch(), one levers snapshot), where a real run writes each step as its own transaction.
    Also for building only, unless `exact`: the machine's `run_ended` with the final record in hand stands
    for a `Sequencer.run_ended` that reads every run to find that record again (one that takes the record
    is called as it is), and `mark_stack_changes` (which reads every run too) is left out, as it writes
    nothing while the fingerprint stays the same. On the store this was written for, each of those reads
    copies the whole runs table, which makes a 10,000-run build take hours; `exact=True` makes the very
    calls `_finish` makes, and the tests hold that both give the same records.
    Every store call is in this function, so a changed store API is adapted here and nowhere else.
    """
    from optseq.state.runs.lever_run import fingerprint
    from optseq.state.runs.passes import ABPasses
    from optseq.state.errors import InputError
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.store import utc_now

    rng = random.Random(seed)
    started_at = time.perf_counter()
    per_lever: dict[str, int] = {}
    built = Built(runs=0, seconds=0.0)
    with Sequencer.open(plan_path, db, mode="write") as seq:
        takes_record = "record" in inspect.signature(seq.run_ended).parameters
        seq.record_criterion("julia_port", "torch_jl", "c4", "fail", evidence="store bench: Torch.jl c4 fails")
        seq.write_plan("option_b", "docs/plans/option_b.md")
        for first in range(0, runs, group):
            with seq.writing():  # building only: one batch per group (see the docstring)
                for k in range(first, min(first + group, runs)):
                    lever_id = None
                    for i in range(len(LEVERS)):
                        candidate = LEVERS[(k + i) % len(LEVERS)]
                        try:
                            seq.check_runnable(candidate)
                        except InputError:
                            continue
                        lever_id = candidate
                        break
                    if lever_id is None:
                        raise BenchError(f"run {k + 1}: none of {', '.join(LEVERS)} can run on this plan")
                    lever = seq.lever(lever_id)
                    rule = lever.rule
                    j = per_lever.get(lever_id, 0)  # the lever's decided runs so far
                    want = "inconclusive" if k % 10 == 9 else ("adopt" if j % 2 == 0 else "reject")
                    per_lever[lever_id] = j + (want != "inconclusive")

                    # -- _launch's first write: the run, running, on the stack without this lever
                    infra = seq.machine.infra()
                    infra["adopted"] = [x for x in infra["adopted"] if x != lever_id]
                    with seq.writing():
                        record = seq.append("runs", {"lever": lever_id, "status": "running", "argv": list(lever.run),
                                                     "pid": os.getpid(), "started": utc_now(), "infra": infra,
                                                     "passes": 0, "runner": "local"})
                    run_id = record["id"]
                    run_dir = seq.store.run_dir(run_id)
                    samples_file = run_dir / "samples.jsonl"

                    # -- the passes: each launch updates the run, its samples go to the file as they come
                    passes = ABPasses(rule)
                    all_samples: list[dict] = []
                    qualities: list[dict] = []
                    warnings: list[str] = []
                    pass_counts: list[dict] = []
                    pass_no, step, log_path = 0, None, None
                    while True:
                        pass_no += 1
                        with seq.writing():
                            child = 20_000 + (run_id * 7 + pass_no) % 40_000
                            seq.store.update("runs", run_id, {"child_pid": child, "pgid": child, "passes": pass_no})
                        samples = _draw_pass(rule, lever_id, want, pass_no, passes.requested, rng,
                                             slow_pair=j % 3 != 0, repeated=k % 5 == 4)
                        with open(samples_file, "a", encoding="utf-8") as f:
                            for s in samples:
                                f.write(json.dumps(s) + "\n")
                        quality = {"name": rule.guards[0].name, "value": 0.0, "limit": float(rule.guards[0].max or 0)}
                        log_path = run_dir / f"pass-{pass_no}.log"
                        log_path.write_text(_log(lever_id, run_id, pass_no, passes.requested, samples, quality),
                                            encoding="utf-8")
                        all_samples += samples
                        qualities.append(quality)
                        step = passes.after_pass(samples, qualities, elapsed_s=1.5 * pass_no, timeout_s=lever.timeout_s)
                        pass_counts.append(step.counts)
                        warnings += step.warnings
                        if step.failure or not step.more:
                            break
                    if step.failure:
                        raise BenchError(f"run {run_id} ({lever_id}): {step.failure}")

                    # -- _finish: the final record, the machine's move, the automatic decision
                    verdict = step.verdict
                    rule_text = f"{rule.metric} sequential bound vs {rule.min_speedup:g}×"  # lever_run's _rule_text
                    summary = {"stats": step.stats.to_dict(), "verdict": verdict.to_dict(), "rule": rule_text}
                    fields = {
                        "status": "succeeded", "ended": utc_now(), "exit_code": 0, "detail": "exited 0 after done",
                        "passes": pass_no, "env": dict(ENV), "fingerprint": fingerprint(ENV, seq.machine.infra()),
                        "samples_file": str(samples_file), "n_samples": len(all_samples), "log": str(log_path),
                        "warnings": warnings[:40], "pass_counts": pass_counts, "summary": summary,
                        "verdict": verdict.outcome,
                    }
                    with seq.writing():
                        seq.store.update("runs", run_id, fields)
                        if takes_record:  # a run_ended that is handed the final record reads nothing
                            seq.run_ended(lever_id, "succeeded", verdict.outcome, dict(record, **fields))
                        elif exact:
                            seq.run_ended(lever_id, "succeeded", verdict.outcome)
                        else:  # Sequencer.run_ended without its look-up of the record we hold
                            for event in seq.machine.run_ended(lever_id, "succeeded", verdict.outcome,
                                                               dict(record, **fields)):
                                seq.store.append("events", event)
                        seq.fire_points("runs", {"lever": lever_id, "status": "succeeded"})
                        if verdict.outcome in ("adopt", "reject"):
                            seq.decide_in_batch(lever_id, verdict.outcome, why=verdict.reason, auto=True,
                                                rule=rule_text, runs=(run_id,), stats=summary["stats"], config=None)
                        if exact:  # the fingerprint never changes here, so this writes nothing
                            seq.mark_stack_changes(run_id, fields["fingerprint"])
                    built.verdicts[verdict.outcome] = built.verdicts.get(verdict.outcome, 0) + 1
                    built.runs += 1
            if progress:
                progress(built.runs, runs)
        built.decisions = len(seq.store.all("decisions"))
        for event in seq.store.all("events"):
            built.events[event.get("type")] = built.events.get(event.get("type"), 0) + 1
    built.seconds = time.perf_counter() - started_at
    return built


def _draw_pass(rule, lever_id: str, want: str, pass_no: int, requested: int, rng: random.Random, *,
               slow_pair: bool, repeated: bool) -> list[dict]:
    """One pass's `sample` events as a bench would send them (tagged with the pass, as lever_run keeps them)."""
    base, unit = BASELINES[lever_id]
    threshold = rule.min_speedup
    ratio = {"adopt": threshold * 1.6, "reject": 0.98}.get(want, threshold)
    samples = []
    for i in range(requested):
        r = ratio
        if want == "inconclusive":
            r = threshold * (1 + (0.02 if i % 2 else -0.02))  # pairs either side: no bound can clear it
        elif pass_no == 1 and i == 2 and slow_pair:
            r = ratio * (0.5 if want == "adopt" else 2.0)  # one pair on the wrong side: a second pass
        for arm, value in (("baseline", base), ("candidate", base * r)):
            samples.append({"event": "sample", "arm": arm, "metric": rule.metric,
                            "value": value * (1 + rng.gauss(0.0, 0.005)), "unit": unit,
                            "higher_is_better": True, "pair": i, "run": pass_no})
    if pass_no == 1 and repeated:
        samples.append(dict(samples[0], value=samples[0]["value"] * 1.01))  # a repeated pair: warned, not counted
    return samples


def _log(lever_id: str, run_id: int, pass_no: int, requested: int, samples: list[dict], quality: dict) -> str:
    """A pass's log: every line the bench printed (protocol events included), as the runner keeps it."""
    lines = [f"{lever_id} bench starting: run {run_id}, pass {pass_no}, {requested} pairs",
             json.dumps({"event": "env", **ENV})]
    for n, s in enumerate(samples):
        lines.append(json.dumps({k: v for k, v in s.items() if k != "run"}))
        if n % 2:
            lines.append(json.dumps({"event": "progress", "done": n // 2 + 1, "total": requested,
                                     "msg": f"pair {n // 2 + 1}"}))
    lines += [json.dumps({"event": "quality", **quality}), json.dumps({"event": "done"})]
    return "\n".join(lines) + "\n"


# ---- timing --------------------------------------------------------------------------------------------

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
    export_s: float
    status_rss: int
    """Bytes: the peak RSS of one more `status --json` process."""
    set_fact_s: float
    """In-process `Sequencer.set_fact` on a Sequencer already open (machine, levers snapshot, store write)."""
    append_s: float
    """In-process `Store.append("facts", …)` on a Store already open: the store's own write."""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_DB", "OPTSEQ_PLAN")}


def child(argv: list[str], *, stdout: Any = subprocess.DEVNULL) -> float:
    """Run one process to its end and return its wall seconds; BenchError if it fails."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=stdout, stderr=err)
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


def peak_rss(argv: list[str]) -> int:
    """The peak resident set of one run of `argv`, in bytes (see _RSS_PROBE)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rss"
        child([sys.executable, "-c", _RSS_PROBE, str(out), *argv])
        return int(out.read_text())


def startup(repeat: int) -> float:
    """Median wall time of `python -m optseq.console.cli --help`: the interpreter and the CLI module, nothing else."""
    return statistics.median(child([*CLI, "--help"]) for _ in range(repeat))


def measure(plan_path: Path, db: Path, repeat: int, built: Built, scratch: Path) -> Row:
    """Time every command `repeat` times side by side on the store at `db`; medians."""
    from optseq.state.store import store as store_module
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.store import Store

    files = [p for p in db.rglob("*") if p.is_file()]
    dir_bytes = sum(p.stat().st_size for p in files)
    tinydb_file = db / getattr(store_module, "DB_NAME", "optseq.json")
    db_bytes = tinydb_file.stat().st_size if tinydb_file.is_file() else None
    common = ["--plan", str(plan_path), "--db", str(db)]
    out = scratch / "export.md"
    times: dict[str, list[float]] = {k: [] for k in ("status", "fact", "decide", "runs", "export")}
    for i in range(repeat):
        times["status"].append(child([*CLI, "status", "--json", *common]))
        times["fact"].append(child([*CLI, "fact", "eval_dense", "true" if i % 2 == 0 else "false", *common]))
        times["decide"].append(child([*CLI, "decide", "amp", "defer", "--why", "store bench: a repeatable write",
                                      *common]))
        times["runs"].append(child([*CLI, "runs", "--json", *common]))
        times["export"].append(child([*CLI, "export", "-o", str(out), *common]))
    rss = peak_rss([*CLI, "status", "--json", *common])
    set_fact, append = [], []
    with Sequencer.open(plan_path, db, mode="write") as seq:
        for i in range(repeat):
            t0 = time.perf_counter()
            seq.set_fact("eval_dense", i % 2 == 0)
            set_fact.append(time.perf_counter() - t0)
    with Store.open(db, mode="write") as store:
        for i in range(repeat):
            t0 = time.perf_counter()
            store.append("facts", {"name": "eval_dense", "value": i % 2 == 1})
            append.append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return Row(runs=built.runs, build_s=built.seconds, dir_bytes=dir_bytes, dir_files=len(files),
               db_bytes=db_bytes, status_s=med["status"],
               fact_s=med["fact"], decide_s=med["decide"], runs_json_s=med["runs"], export_s=med["export"],
               status_rss=rss, set_fact_s=statistics.median(set_fact),
               append_s=statistics.median(append))


# ---- the document --------------------------------------------------------------------------------------

def machine() -> str:
    """CPU, cores, Python and tinydb, in one line."""
    from importlib.metadata import version

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{cpu} ({os.cpu_count()} cores), Python {platform.python_version()}, "
            f"tinydb {version('tinydb')}, {platform.system()} {platform.release()}")


def render(rows: list[Row], *, command: str, repeat: int, startup_s: float, about: str, when: str) -> str:
    head = ["runs", "store dir (files)", "optseq.json", "build", "`status --json`", "`fact` write",
            "`decide amp defer`", "`runs --json`", "`export -o`", "`status` RSS", "in-process `set_fact`",
            "in-process `Store.append`"]
    made_by = f"`make store-bench` (`{command}`)" if command == MAKE_COMMAND else f"`{command}`"
    about_runs = (
        "Each store is built fresh through the real API (`optseq.state.bench.store.build_store`): N finished runs of "
        "cython_bot, option_b and option_a on `configs/sequencing.toml`, in `lever_run`'s record shapes, with a "
        "samples file (about 20 samples) and a log per pass in each run's directory, their automatic adopt/reject "
        "decisions and the stale/superseded events those cause; every tenth run is an inconclusive re-measure. "
        f"Build: the time to build that store, batched by {GROUP} runs (building only).")
    about_times = (
        f"Command columns: the median of {repeat} fresh processes each of "
        "`python -m optseq.console.cli … --plan … --db …`, the commands run side by side; each includes process "
        f"start-up, and `python -m optseq.console.cli --help` takes {_s(startup_s)}. The write is "
        "`fact eval_dense true|false` (alternating) and `decide amp defer --why …`: "
        "`record julia_port …` cannot repeat once the Julia gate is decided. `status` RSS: the peak resident set of "
        "one more `status --json` process. In-process columns: one write on a Sequencer (and on a Store) already "
        "open, median of the same count; `set_fact` is the machine, the levers snapshot and the store write, "
        "`Store.append` the store write alone. Sizes are apparent bytes, MB = 10⁶ bytes.")
    lines = [f"<!-- section:{SECTION} -->", "## Store bench", "",
             f"Written by {made_by} on {when}; {about}.", "",
             *textwrap.wrap(about_runs, 110), "", *textwrap.wrap(about_times, 110), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        db_size = "—" if r.db_bytes is None else f"{r.db_bytes / MB:.1f} MB"
        cells = [f"{r.runs:,}", f"{r.dir_bytes / MB:.1f} MB ({r.dir_files:,})", db_size,
                 _s(r.build_s), _s(r.status_s), _s(r.fact_s), _s(r.decide_s), _s(r.runs_json_s), _s(r.export_s),
                 f"{r.status_rss / MB:.0f} MB", _ms(r.set_fact_s), _ms(r.append_s)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", targets_line(rows), "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def targets_line(rows: list[Row]) -> str:
    """Issue 9's targets at 10,000 runs, each with the figure measured and whether it is met."""
    at = next((r for r in rows if r.runs == TARGET_RUNS), None)
    head = f"Targets at {TARGET_RUNS:,} runs"
    if at is None:
        return f"{head}: not judged, no {TARGET_RUNS:,}-run store in this table."

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    parts = [f"`status` ≤ {_s(TARGETS['status_s'])}: {_s(at.status_s)}, "
             f"{verdict(at.status_s <= TARGETS['status_s'])}",
             f"`record` ≤ {TARGETS['write_store_s'] * 1000:.0f} ms of store time (in-process `set_fact`): "
             f"{_ms(at.set_fact_s)}, {verdict(at.set_fact_s <= TARGETS['write_store_s'])}",
             f"`export` ≤ {_s(TARGETS['export_s'])}: {_s(at.export_s)}, "
             f"{verdict(at.export_s <= TARGETS['export_s'])}"]
    small = min(rows, key=lambda r: r.runs)
    if small is at:
        parts.append("RSS flat: not judged, one store size only")
    else:
        growth = at.status_rss / small.status_rss
        parts.append(f"RSS flat (≤ {TARGETS['rss_growth']:g}× the {small.runs:,}-run store's): "
                     f"{small.status_rss / MB:.0f} → {at.status_rss / MB:.0f} MB ({growth:.1f}×), "
                     f"{verdict(growth <= TARGETS['rss_growth'])}")
    return f"{head}: " + "; ".join(parts) + "."


def write_section(path: Path, section: str, name: str = SECTION) -> None:
    """This bench's section into the document (state.perf_doc); broken markers are a BenchError."""
    try:
        perf_doc.write_section(path, section, name)
    except perf_doc.SectionError as e:
        raise BenchError(str(e)) from None


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms" if ms < 1000 else _s(seconds)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma list of run counts, e.g. 100,1000,10000") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: every run count must be at least 1")
    return sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.store", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=_sizes, default=SIZES, metavar="N,N,…",
                   help=f"store sizes in runs (default {','.join(map(str, SIZES))})")
    p.add_argument("--repeat", type=int, default=REPEAT, help=f"processes per command and size (default {REPEAT})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    p.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help="plan to build on (default configs/sequencing.toml)")
    p.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="build the stores in DIR/runs-N and keep them (default: a temporary directory)")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error(f"--repeat {args.repeat}: needs at least one")
    if args.keep is not None and args.keep.exists() and any(args.keep.iterdir()):
        p.error(f"--keep {args.keep}: not empty; give a new or empty directory")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    startup_s = startup(args.repeat)
    say(f"start-up baseline (--help): {_s(startup_s)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="optseq-store-bench-") as tmp:
        home = (args.keep or Path(tmp)).resolve()  # the commands run from the repository root
        for n in args.runs:
            db = home / f"runs-{n}"
            step = max(GROUP, (n // 10) // GROUP * GROUP)

            def progress(done: int, total: int, _step=step) -> None:
                if done % _step == 0 or done == total:
                    say(f"  building {total:,} runs: {done:,}")

            built = build_store(args.plan, db, n, progress=progress)
            say(f"built {n:,} runs in {_s(built.seconds)} ({built.decisions} decisions, events {built.events})")
            rows.append(measure(args.plan.resolve(), db, args.repeat, built, Path(tmp)))
            say(f"timed {n:,} runs: status {_s(rows[-1].status_s)}")
    command = "python -m optseq.state.bench.store" + (
        f" --runs {','.join(map(str, args.runs))}" if tuple(args.runs) != SIZES else "") + (
        f" --repeat {args.repeat}" if args.repeat != REPEAT else "") + (f" --write {args.write}" if args.write else "")
    section = render(rows, command=command, repeat=args.repeat, startup_s=startup_s, about=machine(), when=when)
    if args.write:
        write_section(args.write, section)
        print(f"wrote {args.write}")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
