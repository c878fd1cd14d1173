"""`python -m optseq.engine.bench LEVER --write docs/performance.md`: rerun one lever, replace only its figures.

`all --write` remeasures every lever (slow, and it moves every other lever's figures too). This reruns one
lever as a child, the way `all` does, and swaps its table row and its `### LEVER` block in the section of
its size, leaving every other line as it was. The block says when and by which command it was measured,
and the machine's load average then, since the section's own date and command belong to the other rows.
"""
from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from optseq.engine.bench.report import (
    LeverRun,
    kept_section,
    render_document,
    render_section,
    run_lever,
    section_marker,
)


def load_line() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # not every platform has one
        return "load average unknown"
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def replace_lever(previous: str, size: str, run: LeverRun, command: str, date: str, load: str) -> str:
    """`previous` with `run`'s row(s) and block in the `size` section; the rest of the document kept."""
    fresh = render_section(size, [run], command, date)
    row_prefix = f"| {run.lever} |"
    rows = [line for line in fresh.splitlines() if line.startswith(row_prefix)]
    block = _block(fresh, run.lever)
    heading = f"### {run.lever}\n"
    block = block.replace(heading, heading + f"\nMeasured {date} by `{command}` ({load}); the other levers "
                          "of this section by its `regenerate` command.\n", 1)
    section = kept_section(previous, size)
    if section is None:
        return render_document(size, [run], command, date, previous)
    lines = section.splitlines()
    # The summary table: from its header to the first line that is not a row (blocks hold tables too).
    table = []
    for i, line in enumerate(lines):
        if line.startswith("| lever |") or (table and i == table[-1] + 1 and line.startswith("|")):
            table.append(i)
    old_rows = [i for i in table if lines[i].startswith(row_prefix)]
    at = old_rows[0] if old_rows else (table[-1] + 1 if table else 1)
    lines = [line for i, line in enumerate(lines) if i not in old_rows]
    lines[at:at] = rows
    text = "\n".join(lines)
    old_block = _block(text, run.lever)
    if old_block:
        text = text.replace(old_block, block, 1)
    else:
        end = section_marker(size, end=True)
        text = text.replace(end, block + end, 1)
    return previous.replace(section, text, 1)


def _block(section: str, lever: str) -> str:
    """From `### lever` up to the next `### ` heading or the section's end marker (excluded)."""
    match = re.search(rf"^### {re.escape(lever)}\n.*?(?=^### |^<!-- /section:)", section, flags=re.S | re.M)
    return match.group(0) if match else ""


def write_lever(lever: str, size: str, write: str, extra: list[str], timeout_s: float = 900.0) -> int:
    print(f"[{lever}] running ...", flush=True)
    load_before = load_line()
    with tempfile.TemporaryDirectory(prefix="optseq-bench-") as tmp:
        run = run_lever(lever, size, timeout_s, Path(tmp), list(extra))
    command = " ".join(["python -m optseq.engine.bench", lever, "--size", size, *extra, "--write", write])
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path = Path(write)
    previous = path.read_text() if path.exists() else ""
    load = f"before: {load_before}; after: {load_line()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replace_lever(previous, size, run, command, date, load))
    print(f"[{lever}] {run.status}; wrote {path}", flush=True)
    return 0 if run.status != "failed" else 1
