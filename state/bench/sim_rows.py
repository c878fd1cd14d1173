"""Rows of the decision-quality table read back from the document that holds them (`simulate --rows`).

Each row of the table is seeded by its own setting (simulate.simulate), so a row simulated alone comes out as a
whole run gives it: `--rows TEXT` simulates the rows it names and takes every other one, the stall counts and the
costs table from the section already written, instead of spending the whole table's half hour on one row.
"""
from __future__ import annotations

import re
from pathlib import Path


class RowsError(ValueError):
    """A document whose section cannot give back a row; str() names the file and what is missing."""


def section_text(path: Path, name: str) -> str:
    """The body of `<!-- section:NAME -->` in `path` (RowsError where the file or the section is missing)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RowsError(f"{path}: cannot be read ({exc.strerror}); --rows keeps the other rows from it") from None
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise RowsError(f"{path}: no one {start} … {end} section to keep the other rows from; run without --rows")
    return text[text.index(start) + len(start):text.index(end)]


def key(cells: list[str]) -> tuple[str, ...]:
    """What names a row: its setting, true ratio, repeats and noise cells."""
    return tuple(cells[:4])


def cells_of(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def read(path: Path, name: str, settings: list, keys, draws: int, row_type) -> tuple[dict, list[str]]:
    """{setting: Row} for each of `settings` as the section holds it, and the section's costs lines (from the
    paragraph that opens them to the section's end). `keys(setting)` gives a setting's first four cells."""
    body = section_text(path, name)
    written = re.search(r"(\d+) draws per row\.", body)
    if written is None or int(written.group(1)) != draws:
        got = written.group(1) if written else "no"
        raise RowsError(f"{path}: its table has {got} draws per row, not {draws}; run without --rows")
    lines = body.splitlines()
    table = {key(cells_of(line)): cells_of(line) for line in lines if line.startswith("| ") and " | " in line}
    stalls = {m.group(1, 2): (int(m.group(3)), int(m.group(4))) for m in (re.match(
        r"(.+?), (.+?): a run adopts only when it met no stall; of the (\d+) runs that measured one, (\d+) adopted",
        line) for line in lines) if m}
    rows = {}
    for setting in settings:
        cells = table.get(key(keys(setting)))
        if cells is None or len(cells) != 10:
            raise RowsError(f"{path}: no row for {' | '.join(keys(setting))}; simulate it too (--rows) or run "
                            "without --rows")
        count = [round(float(c.rstrip("%")) * draws / 100) for c in cells[4:7]]
        met, adopted = stalls.get((setting.group, setting.truth), (0, 0))
        # means back to totals: the table shows them to the digits they were written with, and says them so again
        rows[setting] = row_type(setting, draws, *count, float(cells[7]) * draws, float(cells[8]) * draws,
                                 float(cells[9]) * draws, met_stall=met, adopted_after_stall=adopted)
    opens = next((i for i, line in enumerate(lines) if line.startswith("What a decision costs")), None)
    costs = ["", *lines[opens:]] if opens is not None else []
    while costs and not costs[-1].strip():
        costs.pop()
    return rows, costs
