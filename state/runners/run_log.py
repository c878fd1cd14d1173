"""A run's log file, capped: a lever that prints without end cannot fill the disk under the store.

The first `cap` bytes of the lever's plain output are written as they come; past them only the last `tail` bytes
are held, and written at the end after one line saying how much was left out. Protocol events and optseq's own
notes are always written, in place: they are the run's data (a re-attached Ray run reads its samples back from
the log), and they are small.
"""
from __future__ import annotations

import os
from collections import deque
from typing import BinaryIO

CAP_ENV = "OPTSEQ_LOG_CAP"
"""Bytes of a run's plain output kept whole, from the start (default DEFAULT_CAP); a quarter as much again is kept
from its end."""
DEFAULT_CAP = 64 * 1024 * 1024


def cap_bytes() -> int:
    try:
        value = int(os.environ.get(CAP_ENV, ""))
    except ValueError:
        return DEFAULT_CAP
    return value if value > 0 else DEFAULT_CAP


class CappedLog:
    def __init__(self, raw: BinaryIO, cap: int | None = None):
        self.raw = raw
        self.cap = cap_bytes() if cap is None else cap
        self.tail_cap = max(self.cap // 4, 1)
        self.written = 0
        """Plain output bytes written whole."""
        self.left_out = 0
        self._held: deque[bytes] = deque()
        self._held_bytes = 0

    def write(self, data: bytes, keep: bool = False) -> None:
        if keep:
            self.raw.write(data)
            return
        if not self._held and self.written + len(data) <= self.cap:
            self.raw.write(data)
            self.written += len(data)
            return
        self._held.append(data)
        self._held_bytes += len(data)
        while self._held_bytes > self.tail_cap and len(self._held) > 1:
            dropped = self._held.popleft()
            self._held_bytes -= len(dropped)
            self.left_out += len(dropped)

    def end(self) -> None:
        """The output ended: the held tail goes out, after the line that says what was left out."""
        if not self._held:
            return
        if self.left_out:
            self.raw.write(f"[optseq] log capped at {self.cap} bytes ({CAP_ENV}): {self.left_out} bytes of the "
                           f"command's output left out here; its last {self._held_bytes} bytes follow\n".encode())
        for data in self._held:
            self.raw.write(data)
        self._held.clear()
        self._held_bytes = 0

    def flush(self) -> None:
        self.raw.flush()
