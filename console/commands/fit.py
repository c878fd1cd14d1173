"""Lines for a terminal: its width when stdout is one, and a line wrapped to it by terminal cells."""
from __future__ import annotations

import re
import sys
import unicodedata

INDENT = "    "
"""What a wrapped line's continuation starts with."""


def terminal_width() -> int | None:
    """The columns the table must fit when stdout is a terminal: its width ($COLUMNS first, as ls does); None (no
    limit) for a file or a pipe, whose reader gets whole lines whatever $COLUMNS a parent process left set."""
    try:
        if not sys.stdout.isatty():
            return None
    except (ValueError, AttributeError):
        return None
    import shutil  # a terminal's only: a pipe's reader (and a bench's) pays no import of shutil's compressors

    return shutil.get_terminal_size().columns


def fit(line: str, width: int | None) -> list[str]:
    """The line as is, or wrapped at its spaces to `width` terminal cells (a Korean rationale's characters take two)
    under an indent; the table's padding is kept on the first line, a word wider than a line is cut."""
    if width is None or cells(line) <= width:
        return [line]
    indent = INDENT if width > 2 * len(INDENT) else ""
    lines, current, gap = [], "", ""
    for token in re.split(r"( +)", line):
        if not token:
            continue
        if token.startswith(" "):
            gap = token
            continue
        if current.strip() and cells(current + gap + token) > width:
            lines.append(current)
            current, gap = indent, ""
        current += gap + token
        gap = ""
        while cells(current) > width:  # one word wider than the line
            cut = _cut(current, width)
            lines.append(current[:cut])
            current = indent + current[cut:]
    return lines + ([current] if current.strip() else [])


def cells(text: str) -> int:
    """Terminal cells `text` takes: East Asian wide and full-width characters two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cut(text: str, width: int) -> int:
    """How many characters of `text` fill at most `width` cells (one at least)."""
    used = 0
    for i, c in enumerate(text):
        used += cells(c)
        if used > width:
            return max(i, 1)
    return len(text)
