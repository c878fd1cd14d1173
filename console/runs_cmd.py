"""`optseq runs`: the runs table, and `--json`, the history as one JSON document written record by record as the
store reads it.

The bytes are those of `json.dumps(history, ensure_ascii=False, indent=2)` followed by a newline (what the
command printed when it read the whole history first), so a reader that parses the document sees no change;
the first run is on stdout, flushed, before the rest of the journal is read.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

OK = 0


def print_runs(seq, lever: str | None, as_json: bool) -> int:
    if as_json:  # written as it is read: the first run at once, memory bounded
        return write_json(seq.history_stream(lever), sys.stdout)
    history = seq.history(lever)
    print(render_history(history, change_lines(history["runs"]) if lever is not None else ()))
    return OK


def change_lines(runs: list[dict]) -> list[str]:
    """One line per change point in a lever's runs, with the commits between its two sides counted by git: a hint
    of where to look, under the runs it falls between."""
    from optseq.state.runs.lever_changes import change_text, changes, count_commits

    return [change_text(change, count_commits(change)) for change in changes(runs)]


def write_json(sections: Iterable[tuple[str, Iterator[dict]]], out: TextIO) -> int:
    """{key: [records]} for each (key, records) in order, indented as json.dumps(indent=2) does it."""
    out.write("{")
    for i, (key, records) in enumerate(sections):
        out.write(("," if i else "") + "\n  " + json.dumps(key, ensure_ascii=False) + ": [")
        count = 0
        for record in records:
            # a record's own lines one level deeper; a newline inside a string is escaped, so every "\n" is layout
            text = json.dumps(record, ensure_ascii=False, indent=2).replace("\n", "\n    ")
            out.write(("," if count else "") + "\n    " + text)
            count += 1
            if count == 1:
                out.flush()
        out.write("\n  ]" if count else "]")
    out.write("\n}\n")
    out.flush()
    return OK


def _ratio_text(stats) -> str:
    if not isinstance(stats, dict) or not isinstance(stats.get("estimate"), (int, float)):
        return ""
    bounds = (f" [{stats['ci_low']:.3f}, {stats['ci_high']:.3f}]"
              if isinstance(stats.get("ci_low"), (int, float)) and isinstance(stats.get("ci_high"), (int, float)) else "")
    return f"{stats['estimate']:.3f}×{bounds}"


RUN_COLUMNS = ("run", "lever", "started", "outcome", "ratio [95% CI]", "pairs", "time",
               "baseline → candidate: median (IQR)", "note")
"""The runs table of `optseq runs`, one row per run; the note (a failure's reason, noise) is last, unpadded."""


def run_row(run: dict) -> tuple[str, ...]:
    """One run as the cells of RUN_COLUMNS ('-' where a run has no such figure)."""
    from optseq.console.widgets.figures import duration_text, outcome_text, run_note, units_text, when_text
    from optseq.state.lifecycle.history_points import run_stats
    from optseq.state.runs.stats import arms_text

    stats = run_stats(run)
    return (str(run.get("id")), "compare" if run.get("kind") == "compare" else str(run.get("lever") or "-"),
            when_text(run) or "-", outcome_text(run), _ratio_text(stats) or "-", units_text(stats) or "-",
            duration_text(run) or "-", arms_text(stats) or "-",
            "; ".join(p for p in ("a watch" if run.get("watch") else "", compare_text(run), run_note(run)) if p))


def compare_text(run: dict) -> str:
    """`HEAD fast 41b7152 vs BASE main 974f1b9, tolerance 3%` for a compare; '' for a lever's run."""
    about = run.get("compare") if isinstance(run.get("compare"), dict) else None
    if run.get("kind") != "compare" or about is None:
        return ""
    head, base = about.get("head") or {}, about.get("base") or {}
    tolerance = about.get("tolerance")
    return (f"HEAD {head.get('ref')} {str(head.get('commit'))[:7]} vs BASE {base.get('ref')} "
            f"{str(base.get('commit'))[:7]}" + (f", tolerance {tolerance * 100:.4g}%"
                                                 if isinstance(tolerance, (int, float)) else ""))


def render_history(history: dict, changes: Iterable[str] = ()) -> str:
    """The runs table, the `changes` lines under it (change_lines), then the decisions and criteria."""
    lines = []
    if history["runs"]:
        rows = [RUN_COLUMNS, *(run_row(run) for run in history["runs"])]
        widths = [max(len(row[i]) for row in rows) for i in range(len(RUN_COLUMNS) - 1)]
        for row in rows:
            cells = [row[0].rjust(widths[0]), *(c.ljust(w) for c, w in zip(row[1:-1], widths[1:]))]
            lines.append("  ".join([*cells, row[-1]]).rstrip())
    lines += changes
    for d in history["decisions"]:
        mark = " (superseded)" if d.get("superseded") else ""
        how = "auto" if d.get("auto") else "manual"
        lines.append(f"decision {d['id']:>4}  {d['lever']}  {d['outcome']}  {how}  {d['at']}{mark}  {d.get('why', '')}")
    for c in history["criteria"]:
        lines.append(f"criterion {c['lever']} {c['candidate']} {c['criterion']} {c['outcome']}  {c['at']}  "
                     f"{c.get('evidence', '')}")
    return "\n".join(lines) or "no runs or decisions yet"
