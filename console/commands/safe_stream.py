"""stdout and stderr of the CLI as text a lever cannot use to drive the user's terminal.

Lever output reaches the terminal by many roads (`--run -v` echoes, fail reasons in the summary line, progress
messages, `check`, the notes of `status` and `runs`); one filter at the stream sees them all. The only control
sequence optseq writes itself is the progress bar's line clear, which passes whole.
"""
from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from optseq.state.api import terminal_safe

CLEAR_LINE = "\r\x1b[K"
"""The progress bar's redraw: back to the line's start, then clear it."""


class SafeStream(io.TextIOBase):
    def __init__(self, raw):
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(CLEAR_LINE.join(terminal_safe(part) for part in text.split(CLEAR_LINE)))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return self.raw.isatty()

    # typeshed declares these plain attributes; io.TextIOBase's are read-only descriptors, which a subclass can only
    # override as properties
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.raw.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.raw.errors


@contextmanager
def installed() -> Iterator[None]:
    """sys.stdout and sys.stderr filtered inside the block (not for the console, whose screen Textual draws)."""
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdout, sys.stderr = before
