"""One history table as an append-only file of JSON lines: inserts, updates and replaces, folded on read.

A line is only ever appended, under the store's lock, and counts once the hot file's `ends` says the
journal reaches past it: a writer killed mid-append leaves a tail the next writer cuts off, and a
reader reads up to the committed end and never sees it. Nothing is read before it is asked for, so a
command that only needs the hot state never parses the history.
"""
from __future__ import annotations

import os
import time
import zlib
from pathlib import Path
from collections.abc import Iterator
from typing import Any, BinaryIO

from optseq.state.store.integrity import CHUNK, DOCTOR, line_problem
from optseq.state.store.shape_check import RecordShapeError, line_problem as shape_problem, loads
from optseq.state.store.shapes import FIELDS
from optseq.state.store.storage import StoreCorrupt, StoreUnwritable, dump

INSERT, UPDATE, REPLACE = "i", "u", "r"
PREVIOUS = "pl"
"""A line's offset of the line before it of the same lever (the lever's chain: state/store/settled.py)."""


class Journal:
    """A table's records as of a committed end: folded lazily, then followed incrementally."""

    def __init__(self, path: Path, table: str):
        self.path, self.table = path, table
        self.records: dict[int, dict[str, Any]] = {}
        """id -> record (`id`, its fields, `seq`, `at`), as of `folded` bytes."""
        self.folded = 0
        self.loaded = False
        self.pending: list[dict[str, Any]] = []
        """Lines of the open transaction, not yet written."""
        self.late_pending: list[int] = []
        """Which of `pending` are late (`stage`)."""
        self.levers_pending: list[str | None] = []
        """The lever of each of `pending` whose chain it joins, or None."""
        self.late_written: list[tuple[int, int]] = []
        """(record id, offset) of the late lines the last commit appended."""

    # -- reading ---------------------------------------------------------------------------------
    def ensure(self, end: int) -> None:
        """Fold the file up to `end` (the committed end) into `records`."""
        if self.loaded and self.folded == end:
            return
        start = self.folded if self.loaded else 0
        if not self.loaded:
            self.records = {}
        for line in self.lines(start, end):
            fold(self.records, line)
        self.folded, self.loaded = end, True

    def lines(self, start: int, end: int) -> list[dict[str, Any]]:
        """The parsed lines between two byte offsets of committed history."""
        return [line for _, line in self.iter_lines(start, end)]

    def iter_lines(self, start: int, end: int, chunk: int = CHUNK) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset, parsed line) between two byte offsets of committed history, read a chunk at a time."""
        if end <= start:
            return
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            self._short(start, 0, end)
        with f:
            f.seek(start)
            at, rest = start, b""
            while at + len(rest) < end:
                raw = f.read(min(chunk, end - at - len(rest)))
                if not raw:
                    self._short(start, at + len(rest) - start, end)
                texts = (rest + raw).split(b"\n")
                rest = texts.pop()
                for text in texts:
                    yield at, self._parse(text, at)
                    at += len(text) + 1

    def line_at(self, at: int, rid: int | None, end: int, f: BinaryIO | None = None) -> dict[str, Any]:
        """The line at byte `at` (an index's word), checked to be one of record `rid`'s (any record's, for None)
        before it is used; `f`, the journal already open, for many."""
        if f is None:
            with open(self.path, "rb") as f:
                return self.line_at(at, rid, end, f)
        f.seek(at)
        text = f.readline(max(0, end - at))
        line = self._parse(text.rstrip(b"\n"), at) if at < end and text.endswith(b"\n") else None
        if line is None or (rid is not None and line.get("id") != rid):
            what = "a line" if rid is None else f"a line of record {rid}"
            raise StoreCorrupt(f"{self.path} has no {what} at byte {at}, where an index in the hot file says it is; "
                               f"refusing to use the store so nothing is lost; {DOCTOR}")
        return line

    def _parse(self, text: bytes, at: int) -> dict[str, Any]:
        shape: str | None = None
        problem: str | None
        try:
            line = loads(text)
        except (UnicodeDecodeError, ValueError):
            line, problem = None, "not JSON"
        else:
            problem = line_problem(line)
            if not problem and self.table in FIELDS:
                problem = shape = shape_problem(self.table, line)
        if shape:
            raise RecordShapeError(f"{self.path} has a record of the wrong shape at byte {at} ({shape}); refusing to "
                                   f"use the store so nothing is lost; {DOCTOR}")
        if problem:
            raise StoreCorrupt(f"{self.path} is damaged at byte {at} ({problem}); refusing to use the store so "
                               f"nothing is lost; {DOCTOR}")
        return line

    def _short(self, start: int, got: int, end: int) -> None:
        raise StoreCorrupt(f"{self.path} is shorter ({start + got} bytes) than its committed "
                           f"{end}; refusing to use the store so nothing is lost; restore it")

    def view(self, end: int) -> dict[int, dict[str, Any]]:
        """id -> record, the open transaction's own lines included (copy-on-write over `records`)."""
        self.ensure(end)
        if not self.pending:
            return self.records
        merged = dict(self.records)
        for line in self.pending:
            fold(merged, line)
        return merged

    # -- writing ---------------------------------------------------------------------------------
    def stage(self, line: dict[str, Any], late: bool = False, lever: str | None = None) -> None:
        """Add a line to the open transaction; `late`: it changes a record already settled, `lever`: the lever whose
        chain it joins (state/store/settled.py)."""
        self.pending.append(line)
        self.levers_pending.append(lever)
        if late:
            self.late_pending.append(len(self.pending) - 1)

    def commit(self, end: int, crc: int, heads: dict[str, int] | None = None) -> tuple[int, int]:
        """Append the staged lines at the committed `end` and make them durable; returns the new end and the CRC-32
        of the bytes up to it (`crc` being the one up to `end`). `heads` (lever -> offset of its last line), when
        the journal keeps its levers' chains (state/store/settled.py), gets each staged line of a lever, which
        points back at the lever's line before it (`pl`)."""
        self.late_written = []
        if not self.pending:
            return end, crc
        encoded, at, chained = [], end, dict(heads or {})
        for line, lever in zip(self.pending, self.levers_pending):
            if heads is not None and lever is not None:
                line = {**line, PREVIOUS: chained[lever]} if lever in chained else line
                chained[lever] = at
            encoded.append(dump(line).encode("utf-8") + b"\n")
            at += len(encoded[-1])
        data = b"".join(encoded)
        try:
            with open(self.path, "ab") as f:
                if f.tell() != end:
                    raise StoreCorrupt(f"{self.path} is {f.tell()} bytes, not its committed {end}; refusing to "
                                       "append so nothing is lost")
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise StoreUnwritable(f"cannot write {self.path}: {e.strerror or e}") from e
        new_end = end + len(data)
        offsets = [end]
        for text in encoded[:-1]:
            offsets.append(offsets[-1] + len(text))
        self.late_written = [(self.pending[i]["id"], offsets[i]) for i in self.late_pending]
        if self.loaded and self.folded == end:
            for line in self.pending:
                fold(self.records, line)
            self.folded = new_end
        self.pending, self.late_pending, self.levers_pending = [], [], []
        if heads is not None:
            heads.update(chained)
        return new_end, zlib.crc32(data, crc)

    def discard(self) -> None:
        self.pending, self.late_pending, self.levers_pending = [], [], []

    def forget(self) -> None:
        """Drop what was folded: lines folded by a commit whose hot file never landed must not be seen."""
        self.records, self.folded, self.loaded = {}, 0, False

    def cut(self, end: int) -> None:
        """Remove a tail past the committed end: a writer died while appending it. Only under the lock."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            size = 0
        if size < end:
            raise StoreCorrupt(f"{self.path} is shorter ({size} bytes) than its committed {end}; refusing to use "
                               "the store so nothing is lost; restore it")
        if size > end:
            with open(self.path, "r+b") as f:
                # never truncated without a copy: the tail is a dead writer's uncommitted lines, kept beside
                f.seek(end)
                keep = self.path.with_name(f"{self.path.name}.cut-{end}-{time.time_ns()}")
                try:
                    keep.write_bytes(f.read())
                except OSError as e:  # no copy, no cut: the tail stays until there is room to keep it
                    keep.unlink(missing_ok=True)
                    raise StoreUnwritable(f"cannot keep a copy of {self.path}'s uncommitted tail (bytes {end}–{size}) "
                                          f"before cutting it: {e.strerror or e}") from e
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())


def fold(records: dict[int, dict[str, Any]], line: dict[str, Any]) -> None:
    """Apply one line to `records`, never changing a record dict in place (views share them)."""
    op, rid, fields = line["op"], line["id"], line.get("r") or {}
    if op == UPDATE:
        old = records.get(rid)
        if old is not None:
            records[rid] = {**old, **fields}
        return
    records[rid] = {"id": rid, **fields, "seq": line.get("seq"), "at": line.get("at")}
