"""The sync bench's section of docs/performance.md: a sync beside a bare `git fetch`, and issue 39's goals judged."""
from __future__ import annotations

import textwrap
from pathlib import Path

from optseq.state.bench import store_doc
from optseq.state.bench.store_doc import fmt_s

SECTION = "sync"
INC_FETCH_RATIO = 2.0
"""An incremental sync within 2× the bare fetch of the same refs (issue 39, point 6)."""
INC_OWN_S = 1.0
"""…and under 1 s of optseq's own time."""
IMPORTS = ("optseq.console.cli", "optseq.console.commands.sync_cmd", "optseq.state.sync.sync",
           "optseq.state.store.store")
"""What an incremental `optseq sync` imports: the CLI, the command, the sync and the store (a merge of fewer than
FOLLOW_AT lines imports no sequencer: console/commands/sync_cmd.py)."""
MAKE_COMMAND = "python -m optseq.state.bench.sync --write docs/performance.md"


def render(rows: list, *, command: str, repeat: int, first: int, about: str, when: str) -> str:
    made_by = f"`make sync-bench` (`{command}`)" if command == MAKE_COMMAND else f"`{command}`"
    about_runs = (
        "Store A is built as the store bench builds its stores (N real-shaped lever runs through the real API; with "
        "`--stores DIR`, built once into DIR and kept, the build column the time that build took, and its hot file "
        "and journals copied for each run, so A's first push also reads the copied journals whole once, as any open "
        "of journals their writer did not leave does) and pushes its whole history with `optseq sync` to a new "
        "bare repository reached as a `file://` URL (push: one process). First sync: an empty store B syncs that "
        "history; incremental: A records one more run (the same builder, not timed) and syncs it (A's push), "
        "then B syncs it in. Beside each, the floor: `git fetch` of the same refs (`refs/optseq/writers/*`) into "
        "an empty bare repository, and into that one again one run later. `status`: `status --json` in B after "
        "each sync.")
    passes = (f"the median of {repeat} passes" if first == repeat else
              f"the median of {first} pass{'es' if first != 1 else ''} for the first sync (its columns up to "
              f"`status` after) and of {repeat} for the incremental one")
    about_times = (
        f"Each figure is {passes}, each command a fresh process of the real CLI "
        "(`python -m optseq.console.cli sync URL --plan … --db …`), the commands of a pass side by side. optseq's "
        "own time = the sync's wall time less the elapsed time of the git commands it ran, as git reports them "
        "(GIT_TRACE2_EVENT: each git process's exit event); it includes Python's start-up (below). Records: runs, "
        "decisions, events, criteria and facts in A at the end (B holds as many: the bench checks it).")
    head = ["runs", "records", "build", "A's first push", "first sync", "its git", "its own",
            "`git fetch` (floor)", "`status` after", "A's push of one run", "incremental sync", "its git", "its own",
            "`git fetch` (floor)", "`status` after"]
    lines = [f"<!-- section:{SECTION} -->", "## Sync: `optseq sync` beside `git fetch`", "",
             f"Written by {made_by} on {when}; {about}.", "",
             *textwrap.wrap(about_runs, 110), "", *textwrap.wrap(about_times, 110), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [f"{r.runs:,}", f"{r.records:,}", fmt_s(r.build_s), fmt_s(r.push_s), fmt_s(r.first.wall_s),
                 fmt_s(r.first.git_s), fmt_s(r.first.own_s), fmt_s(r.first_fetch_s), fmt_s(r.first_status_s),
                 fmt_s(r.push_one_s), fmt_s(r.inc.wall_s), fmt_s(r.inc.git_s), fmt_s(r.inc.own_s),
                 fmt_s(r.inc_fetch_s), fmt_s(r.inc_status_s)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *goals(rows), "", *bounds(rows), "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def bounds(rows: list) -> list[str]:
    """What bounds the incremental sync beside the bare fetch, from the figures measured beside it."""
    if not rows or max(rows, key=lambda r: r.runs).startup is None:
        return []
    at = max(rows, key=lambda r: r.runs)
    startup = at.startup
    ceiling = INC_FETCH_RATIO * at.inc_fetch_s
    text = (
        f"What bounds the incremental sync ({at.runs:,} runs; each process below run once in each of its passes, "
        f"beside it, medians): any fresh Python process here takes {fmt_s(startup.python_s)} (`python -c pass`), "
        "and one that imports what an incremental sync runs (the CLI, the command, the sync and the store: "
        f"`python -c \"import {', '.join(IMPORTS)}\"`) {fmt_s(startup.imports_s)}; the CLI's `--help` "
        f"{fmt_s(startup.cli_s)}. The bare fetch of the same refs "
        f"takes {fmt_s(at.inc_fetch_s)}, so 2× it is {fmt_s(ceiling)}"
        + (": less than the interpreter's start alone, so no Python command that runs that fetch too can meet the "
           "2× goal." if ceiling < startup.python_s else
           f", of which the interpreter's start leaves {fmt_s(ceiling - startup.python_s)} for the imports, the "
           "sync's own work and its git commands.")
        + f" Of the sync's {fmt_s(at.inc.wall_s)}, its git commands took {fmt_s(at.inc.git_s)} (its "
        "fetch, the ref checks and the cat-file of the new segment) and optseq's own time "
        f"{fmt_s(at.inc.own_s)}, of which the start and the imports are {fmt_s(startup.imports_s)}: the rest, "
        f"{fmt_s(max(0.0, at.inc.own_s - startup.imports_s))}, is the sync's own work (the store's open, "
        "the segment's checks and merge, the bookkeeping commits).")
    return textwrap.wrap(text, 110)


def goals(rows: list) -> list[str]:
    """Issue 39's goals, judged at the largest size measured (and said to be so when it is not 100,000 runs)."""
    if not rows:
        return ["Goals: not judged, no size measured."]
    at = max(rows, key=lambda r: r.runs)
    status_target = store_doc.TARGETS["status_s"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    ratio = at.inc.wall_s / at.inc_fetch_s if at.inc_fetch_s else float("inf")
    worst_status = max(at.first_status_s, at.inc_status_s)
    where = f"at {at.runs:,} runs" + ("" if at.runs >= store_doc.TARGET_RUNS else
                                      f" (the largest size measured here; the issue's size is "
                                      f"{store_doc.TARGET_RUNS:,})")
    text = (f"Goals {where}: an incremental sync within {INC_FETCH_RATIO:g}× the bare fetch: {fmt_s(at.inc.wall_s)} "
            f"vs {fmt_s(at.inc_fetch_s)} ({ratio:.1f}×), {verdict(ratio <= INC_FETCH_RATIO)}; under "
            f"{fmt_s(INC_OWN_S)} of optseq's own time: {fmt_s(at.inc.own_s)}, {verdict(at.inc.own_s < INC_OWN_S)}; "
            f"`status` after a merge within the store bench's {fmt_s(status_target)}: {fmt_s(worst_status)} (the "
            f"slower of after the first and after the incremental sync), {verdict(worst_status <= status_target)}.")
    return textwrap.wrap(text, 110)


def write_section(path: Path, section: str) -> None:
    store_doc.write_section(path, section, SECTION)
