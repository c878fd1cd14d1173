"""The export's marker: the last line that tells a doc optseq wrote from a file it must not replace."""
from __future__ import annotations

import re

from optseq.state.report.escape import one_line

MARKER = "<!-- optseq export -->"
"""The last line of every export (`<!-- optseq export DATE -->` with a date): a file without it on its
last line was not written by optseq, and report/target.py will not replace it unforced."""
_MARKER_LINE = re.compile(r"<!-- optseq export(?: [^\n]*)? -->")


def marker(day: str | None = None) -> str:
    """The export's last line; a date is kept to what cannot end the comment early."""
    if day is None:
        return MARKER
    day = re.sub(r"-{2,}", "-", one_line(str(day)).replace("<", "").replace(">", "")).strip()
    return f"<!-- optseq export {day} -->" if day else MARKER


def is_export(text: str) -> bool:
    """Whether `text` (a file's content, or its tail) ends with an export's marker line."""
    last = text.rstrip().rpartition("\n")[2].strip()
    return bool(_MARKER_LINE.fullmatch(last))
