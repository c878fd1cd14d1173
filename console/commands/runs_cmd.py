"""`optseq runs`: the runs table, and `--json`, the history as one JSON document written record by record as the
store reads it, and each lever's change points after it (`changes`, what `optseq runs LEVER` prints).

The bytes are those of `json.dumps({**history, "changes": [...]}, ensure_ascii=False, indent=2)` followed by a
newline (what the command printed when it read the whole history first), so a reader that parses the document
sees no change; the first run is on stdout, flushed, before the rest of the journal is read.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, TextIO

from optseq.console.commands.fit import fit, terminal_width
from optseq.state.api import ratio_text
from optseq.console.words.writers import origin_text, writer_cell
from optseq.state.api import testbed_label as label
from optseq.state.api import Exit

if TYPE_CHECKING:
    from optseq.state.api import Kept, Run, Stats


def print_runs(seq, lever: str | None, as_json: bool) -> int:
    if as_json:  # written as it is read: the first run at once, memory bounded
        import tempfile

        with tempfile.TemporaryFile() as spill:
            kept: dict[str, Kept] = {}
            sections = [(key, _keeping(records, kept, spill) if key == "runs" else records)
                        for key, records in seq.views.history_stream(lever)]
            return write_json([*sections, ("changes", _changes(kept))], sys.stdout)
    history = seq.views.history(lever)
    print(render_history(history, change_lines(history["runs"]) if lever is not None else (), terminal_width()))
    return Exit.OK


def change_lines(runs: list[dict]) -> list[str]:
    """One line per change point in a lever's runs, with the commits between its two sides counted by git: a hint
    of where to look, under the runs it falls between."""
    from optseq.state.api import change_text, changes, count_commits

    return [change_text(change, count_commits(change)) for change in changes(runs)]


def _keeping(runs: Iterator[dict], kept: dict[str, Kept], spill: BinaryIO) -> Iterator[dict]:
    """The runs as they are written, each lever's kept in `kept` as little as its change points need (a Kept: its
    ids and numbers in arrays, where each was measured as one of the few distinct places), spilled to `spill` a
    chunk at a time: a long history keeps a few KiB a lever in memory."""
    from optseq.state.api import Kept

    for run in runs:
        if isinstance(lever := run.get("lever"), str):
            if (series := kept.get(lever)) is None:
                series = kept[lever] = Kept(spill)
            series.add(run)
        yield run


def _changes(kept: dict[str, Kept]) -> Iterator[dict]:
    """Every lever's change points, as `optseq runs LEVER` prints them under its runs, for a script to read."""
    from optseq.state.api import change_text, count_commits

    for lever, runs in kept.items():
        for change in runs.changes():
            count = count_commits(change)
            yield {"lever": lever, "run": change.run, "previous": change.previous, "before": change.before,
                   "after": change.after, "old": change.old, "new": change.new, "commits_between": count,
                   "text": change_text(change, count)}


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
    return Exit.OK


def _ratio_text(stats: Stats) -> str:
    if stats.estimate is None:
        return ""
    bounds = (f" [{ratio_text(stats.ci_low, 3)}, {ratio_text(stats.ci_high, 3)}]"
              if stats.ci_low is not None and stats.ci_high is not None else "")
    return f"{ratio_text(stats.estimate, 3)}×{bounds}"


RUN_COLUMNS = ("run", "lever", "started", "outcome", "ratio [95% CI]", "pairs", "time",
               "baseline → candidate: median (IQR)", "note")
"""The runs table of `optseq runs`, one row per run; the note (a failure's reason, noise) is last, unpadded."""


def run_row(record: dict) -> tuple[str, ...]:
    """One run as the cells of RUN_COLUMNS ('-' where a run has no such figure): the store's record decoded once,
    its screen's summary read from the record as stored (lifecycle/screened.py)."""
    from optseq.console.words.figures import duration_text, outcome_text, run_note, units_text, when_text
    from optseq.state.api import Run, arms_text, as_

    run = as_(Run, record)
    stats = run.stats
    kind = run.kind if run.kind in ("compare", "screen") else None
    return (str(run.id), kind or str(run.lever or "-"),
            when_text(run) or "-", outcome_text(run), _ratio_text(stats) or "-", units_text(stats) or "-",
            duration_text(run) or "-", arms_text(stats) or "-",
            "; ".join(p for p in ("a watch" if run.watch else "", compare_text(run), screen_text(run, record),
                                  run_note(run)) if p))


def compare_text(run: Run) -> str:
    """`HEAD fast 41b7152 vs BASE main 974f1b9, tolerance 3%` for a compare; '' for a lever's run."""
    about = run.compare
    if run.kind != "compare" or about is None:
        return ""
    head, base = about.get("head") or {}, about.get("base") or {}
    tolerance = about.get("tolerance")
    return (f"HEAD {head.get('ref')} {str(head.get('commit'))[:7]} vs BASE {base.get('ref')} "
            f"{str(base.get('commit'))[:7]}" + (f", tolerance {tolerance * 100:.4g}%"
                                                 if isinstance(tolerance, (int, float)) else ""))


def screen_text(run: Run, record: dict) -> str:
    """A screen's design, blocks, launches, each lever's call and its interactions' sentences, in one cell; '' for
    any other run."""
    if run.kind != "screen" or run.screen is None:
        return ""
    from optseq.state.api import screen_summary as summary, screen_summary_lines as summary_lines

    first, *rest = summary_lines(summary(record))
    return "; ".join([first.split(" over ", 1)[-1], *(line.strip() for line in rest)])


DROPPED_FIRST = ("baseline → candidate: median (IQR)", "started", "pairs", "time")
"""The columns a narrow terminal loses, first to last: the run id, lever, outcome and ratio stay."""
NOTE_ROOM = 24
"""The width a row leaves its note before a column is dropped for it."""


def render_history(history: dict, changes: Iterable[str] = (), width: int | None = None) -> str:
    """The runs table, the `changes` lines under it (change_lines), then the decisions and criteria; with a
    `width`, no line is wider: columns go (DROPPED_FIRST) and what remains wraps under an indent."""
    lines = []
    if history["runs"]:
        columns: tuple[str, ...] = RUN_COLUMNS
        rows = [columns, *(run_row(run) for run in history["runs"])]
        testbeds = [label(run) for run in history["runs"]]
        if len(set(testbeds)) > 1:  # one machine's history needs no column saying so; several name each number's
            at = RUN_COLUMNS.index("lever") + 1
            columns = (*RUN_COLUMNS[:at], "testbed", *RUN_COLUMNS[at:])
            rows = [columns, *((*row[:at], testbed, *row[at:]) for row, testbed in zip(rows[1:], testbeds))]
        writers = [writer_cell(run) for run in history["runs"]]
        if len(set(writers)) > 1:  # runs merged from other writers (optseq sync): each names its writer and its id there
            at = columns.index("lever") + 1
            columns = (*columns[:at], "writer", *columns[at:])
            rows = [columns, *((*row[:at], writer, *row[at:]) for row, writer in zip(rows[1:], writers))]
        shown = list(range(len(columns) - 1))
        for name in DROPPED_FIRST:
            if not width or _table_width(rows, shown) + 2 + NOTE_ROOM <= width:
                break
            shown.remove(columns.index(name))
        widths = {i: max(len(row[i]) for row in rows) for i in shown}
        for row in rows:
            cells = [row[i].rjust(widths[i]) if i == 0 else row[i].ljust(widths[i]) for i in shown]
            lines += fit("  ".join([*cells, row[-1]]).rstrip(), width)
    for line in changes:
        lines += fit(line, width)
    for d in history["decisions"]:
        mark = " (superseded)" if d.get("superseded") else ""
        how = "auto" if d.get("auto") else "manual"
        came = origin_text(d, "decision")  # made in another writer's store (optseq sync)
        lines += fit(f"decision {d['id']:>4}  {d['lever']}  {d['outcome']}  {how}  {d['at']}{mark}  "
                      f"{f'({came})  ' if came else ''}{d.get('why', '')}".rstrip(), width)
    for c in history["criteria"]:
        lines += fit(f"criterion {c['lever']} {c['candidate']} {c['criterion']} {c['outcome']}  {c['at']}  "
                      f"{c.get('evidence', '')}".rstrip(), width)
    return "\n".join(lines) or "no runs or decisions yet"


def _table_width(rows: list[tuple[str, ...]], shown: list[int]) -> int:
    return sum(max(len(row[i]) for row in rows) for i in shown) + 2 * (len(shown) - 1)
