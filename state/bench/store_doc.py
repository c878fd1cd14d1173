"""The store bench's section of docs/performance.md: the table of figures and issue 9's targets judged."""
from __future__ import annotations

import math
import os
import platform
import textwrap
from pathlib import Path

from optseq.state.bench import perf_doc, store_measure
from optseq.state.bench.store_build import GROUP, POOL, BenchError
from optseq.state.bench.store_measure import Row

SECTION = "store"
TARGETS = {"status_s": 0.25, "write_store_s": 0.050, "export_s": 1.0, "first_s": 0.3, "rss_growth": 1.25}
"""Issue 25's targets at 100,000 runs (issue 9's at 10,000, and the first `runs --json` record); "RSS flat" is read
as at most 1.25× the smallest store's RSS, for `status` and for `runs --json`."""
TARGET_RUNS = 100_000
MAKE_COMMAND = "python -m optseq.state.bench.store --write docs/performance.md"
"""What `make store-bench` runs; the section names the make target when it was written by it."""
MB = 1e6


def machine() -> str:
    """CPU, cores, Python and tinydb, in one line."""
    from importlib.metadata import version

    cpu = perf_doc.cpu_name()
    return (f"{cpu} ({os.cpu_count()} cores), Python {platform.python_version()}, "
            f"tinydb {version('tinydb')}, {platform.system()} {platform.release()}")


def render(rows: list[Row], *, command: str, repeat: int, startup_s: float, about: str, when: str) -> str:
    head = ["runs", "store dir (files)", "optseq.json", "build", "`status --json`", "`fact` write",
            "`decide amp defer`", "`runs --json` first record", "`runs --json`", "`runs option_b --json`",
            "`export -o`", "`status` RSS", "`runs --json` RSS", "in-process `set_fact`", "in-process `Store.append`"]
    made_by = f"`make store-bench` (`{command}`)" if command == MAKE_COMMAND else f"`{command}`"
    about_runs = (
        "Each store is built fresh through the real API (`optseq.state.bench.store_build.build_store`): N finished "
        "runs of cython_bot, option_b and option_a on `configs/sequencing.toml`, in `lever_run`'s record "
        "shapes, with a samples file (about 20 samples) and a log per pass in each run's directory, their automatic "
        "adopt/reject decisions and the stale/superseded events those cause; every tenth run is an inconclusive "
        "re-measure. "
        f"Build: the time to build that store, batched by {GROUP} runs (building only); a run of the same kind "
        f"(lever, verdict wanted, slow pair, repeated sample) as one {POOL} runs of that kind before reuses its drawn "
        "samples and the pass loop's verdict on them, which is what makes a 100,000-run store take minutes; every "
        "record, log and samples file is still written through the real API, one run at a time. A build column "
        "that says kept: the store was built by an earlier `--keep DIR` run and timed again here (`--reuse DIR`), "
        "with the few records earlier timings wrote.")
    about_times = (
        f"Command columns: the median of {repeat} fresh processes each of "
        "`python -m optseq.console.cli … --plan … --db …`, the commands run side by side; each includes process "
        f"start-up, and `python -m optseq.console.cli --help` takes {fmt_s(startup_s)}. The write is "
        "`fact eval_dense true|false` (alternating) and `decide amp defer --why …`: "
        "`record julia_port …` cannot repeat once the Julia gate is decided. `status` RSS: the peak resident set of "
        "one more `status --json` process. In-process columns: one write on a Sequencer (and on a Store) already "
        f"open, median of {store_measure.WRITES} after one not counted (a process's first write also loads what "
        "only writes need, the lever machines' transitions among them); `set_fact` is the machine, the levers "
        "snapshot and the store write, "
        "`Store.append` the store write alone. `runs --json` first record: from the process's start to its first "
        "run's record whole on stdout, in the same processes as `runs --json` (the whole). `runs --json` RSS: the "
        "peak resident set of one more `runs --json`. Sizes are apparent bytes, MB = 10⁶ bytes.")
    lines = [f"<!-- section:{SECTION} -->", "## Store bench", "",
             f"Written by {made_by} on {when}; {about}.", "",
             *textwrap.wrap(about_runs, 110), "", *textwrap.wrap(about_times, 110), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        db_size = "—" if r.db_bytes is None else f"{r.db_bytes / MB:.1f} MB"
        cells = [f"{r.runs:,}", f"{r.dir_bytes / MB:.1f} MB ({r.dir_files:,})", db_size,
                 "kept" if math.isnan(r.build_s) else fmt_s(r.build_s), fmt_s(r.status_s), fmt_s(r.fact_s), fmt_s(r.decide_s), fmt_s(r.runs_first_s),
                 fmt_s(r.runs_json_s), fmt_s(r.runs_lever_s), fmt_s(r.export_s),
                 f"{r.status_rss / MB:.0f} MB", f"{r.runs_rss / MB:.0f} MB", _ms(r.set_fact_s), _ms(r.append_s)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", targets_line(rows), *check_table(rows, repeat), "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def check_table(rows: list[Row], repeat: int) -> list[str]:
    """The schema check's cost (store_measure.Check) by store size, beside the parse it follows."""
    checked = [(r, r.check) for r in rows if r.check is not None]
    if not checked:
        return []
    about = (
        "The schema check (`state/store/shapes.py`, msgspec): every record read is checked against one schema. "
        f"In-process, on the same stores: the hot file's check (every open pays it; median of {store_measure.WRITES}"
        " after one not counted), and every journal line of the store, each parsed by `json.loads` (the parse "
        "before), parsed as the store parses it now (msgspec's decoder, `shape_check.loads`) and checked "
        f"(`shape_check.line_problem` and the line's frame), side by side in each of {repeat} passes; medians. A "
        "command reads journal lines only where it prints history (`runs`), or at an open that finds a journal its "
        "writer did not leave (read whole, each line checked, once)."
    )
    head = ["runs", "journal lines", "hot file check", "lines: `json.loads` (before)", "lines: msgspec parse",
            "lines: schema check", "msgspec parse + check vs `json.loads`", "per line: before → now"]
    out = ["", *textwrap.wrap(about, 110), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r, c in checked:
        now = c.decode_s + c.check_s
        per = f"{c.loads_s / c.lines * 1e6:.1f} → {now / c.lines * 1e6:.1f} µs" if c.lines else "—"
        out.append("| " + " | ".join([f"{r.runs:,}", f"{c.lines:,}", _ms(c.hot_s), _ms(c.loads_s),
                                       _ms(c.decode_s), _ms(c.check_s),
                                       f"{now / c.loads_s:.2f}×" if c.loads_s else "—", per]) + " |")
    return out


def targets_line(rows: list[Row]) -> str:
    """The targets at TARGET_RUNS runs, each with the figure measured and whether it is met."""
    at = next((r for r in rows if r.runs == TARGET_RUNS), None)
    head = f"Targets at {TARGET_RUNS:,} runs"
    if at is None:
        return f"{head}: not judged, no {TARGET_RUNS:,}-run store in this table."

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    parts = [f"`status` ≤ {fmt_s(TARGETS['status_s'])}: {fmt_s(at.status_s)}, "
             f"{verdict(at.status_s <= TARGETS['status_s'])}",
             f"`record` ≤ {TARGETS['write_store_s'] * 1000:.0f} ms of store time (in-process `set_fact`): "
             f"{_ms(at.set_fact_s)}, {verdict(at.set_fact_s <= TARGETS['write_store_s'])}",
             f"`export` ≤ {fmt_s(TARGETS['export_s'])}: {fmt_s(at.export_s)}, "
             f"{verdict(at.export_s <= TARGETS['export_s'])}",
             f"first `runs --json` record ≤ {fmt_s(TARGETS['first_s'])}: {fmt_s(at.runs_first_s)}, "
             f"{verdict(at.runs_first_s <= TARGETS['first_s'])}"]
    small = min(rows, key=lambda r: r.runs)
    if small is at:
        parts.append("RSS flat: not judged, one store size only")
    else:
        for what, big, base in (("`status`", at.status_rss, small.status_rss),
                                ("`runs --json`", at.runs_rss, small.runs_rss)):
            if not base:
                continue
            growth = big / base
            parts.append(f"{what} RSS flat (≤ {TARGETS['rss_growth']:g}× the {small.runs:,}-run store's): "
                         f"{base / MB:.0f} → {big / MB:.0f} MB ({growth:.1f}×), "
                         f"{verdict(growth <= TARGETS['rss_growth'])}")
    return f"{head}: " + "; ".join(parts) + "."


def write_section(path: Path, section: str, name: str = SECTION) -> None:
    """This bench's section into the document (state.perf_doc); broken markers are a BenchError."""
    try:
        perf_doc.write_section(path, section, name)
    except perf_doc.SectionError as e:
        raise BenchError(str(e)) from None


def fmt_s(seconds: float) -> str:
    """Seconds as the table writes them: two decimals under 10 s, fewer above."""
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms" if ms < 1000 else fmt_s(seconds)

