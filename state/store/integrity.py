"""What the store committed, checked on every open: the hot file's meta, each journal's committed bytes against
the checksum the hot file keeps of them, and, when they differ, a scan that says where the damage is.

The model is git's and SQLite's: detect, refuse in one line naming the file and the byte offset, never repair by
guessing. A missing or empty hot file beside journals that hold history is damage too, not a new store: taking
it for one would cut every journal to a committed end of 0. `optseq doctor --rebuild` (state/store/doctor.py)
is the one way to rebuild the hot file, and it keeps a copy of what it replaces.
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from optseq.state.store.storage import StoreCorrupt

SUMS = "sums"
"""The meta key holding each journal's CRC-32 over its committed bytes [0, end): {table: crc}."""
CHUNK = 1 << 20
DOCTOR = "`optseq doctor` says what is sound; restore the file from a backup, or move the store aside"
OPS = ("i", "u", "r")


def crc_of(path: Path, end: int, start: int = 0, crc: int = 0) -> int:
    """CRC-32 of the file's bytes [start, end), continuing `crc` (zlib's running form: commits extend it)."""
    if end <= start:
        return crc
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    return crc


def meta_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with the hot file's meta record beyond its schema version (which schema.py checks)."""
    for key in ("ends", "ids", SUMS):
        value = meta.get(key)
        if value is None and key == SUMS:
            continue  # a store written before checksums were kept: its first write adds them
        if not isinstance(value, dict):
            return f"meta.{key} is {json.dumps(value)[:40]}, not an object of tables"
        for table, number in value.items():
            if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                return f"meta.{key}.{table} is {json.dumps(number)[:40]}, not a count"
    return None


def line_problem(line: Any) -> str | None:
    """What makes a parsed journal line not a record (None when it is one)."""
    if not isinstance(line, dict) or line.get("op") not in OPS:
        return "not a record (no op i, u or r)"
    rid = line.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool) or rid < 1:
        return f"record id {json.dumps(rid)[:20]} is not a positive integer"
    if not isinstance(line.get("r", {}), dict):
        return "its fields (r) are not an object"
    seq = line.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        return f"its seq {json.dumps(seq)[:20]} is not an integer"
    return None


def scan(path: Path, end: int | None = None) -> tuple[list[dict[str, Any]], int, str | None]:
    """The journal's records up to `end` (its whole size when None), the offset after the last whole sound line,
    and what is wrong at that offset (None when every line up to `end` is a sound record). A last line without
    its newline is a writer's unfinished append: it stops the scan with its problem said."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""
    if end is not None:
        if len(raw) < end:
            return [], 0, f"shorter ({len(raw)} bytes) than its committed {end}"
        raw = raw[:end]
    records, at, line_no = [], 0, 0
    while at < len(raw):
        line_no += 1
        stop = raw.find(b"\n", at)
        if stop < 0:
            return records, at, f"line {line_no} has no end (an unfinished append)"
        try:
            line = json.loads(raw[at:stop])
        except (UnicodeDecodeError, ValueError):
            return records, at, f"line {line_no} is not JSON"
        problem = line_problem(line)
        if problem:
            return records, at, f"line {line_no}: {problem}"
        records.append(line)
        at = stop + 1
    return records, at, None


def check_journals(directory: Path, journals: dict, meta: dict[str, Any]) -> None:
    """Every journal's committed bytes as the hot file says they were written: StoreCorrupt naming the file and
    the byte offset otherwise. Reads each journal once, without parsing, unless it is damaged."""
    ends, sums = meta.get("ends") or {}, meta.get(SUMS) or {}
    for table, journal in journals.items():
        end = int(ends.get(table, 0))
        try:
            size = os.path.getsize(journal.path)
        except FileNotFoundError:
            size = 0
        if size < end:
            raise StoreCorrupt(f"{journal.path} is shorter ({size} bytes) than its committed {end}: history is "
                               f"missing; refusing to use the store so nothing more is lost; {DOCTOR}")
        if table in sums and crc_of(journal.path, end) != sums[table]:
            _, at, problem = scan(journal.path, end)
            where = (f"is damaged at byte {at} ({problem})" if problem else
                     f"does not match the checksum of its committed {end} bytes (changed after it was written)")
            raise StoreCorrupt(f"{journal.path} {where}; refusing to use the store so nothing is lost; {DOCTOR}")


def orphaned_history(hot: Path, journals: dict) -> None:
    """No hot file (or an empty one) is a new store only where no journal holds history: StoreCorrupt otherwise."""
    held = [(j.path, os.path.getsize(j.path)) for j in journals.values() if j.path.is_file()]
    held = [(path, size) for path, size in held if size]
    if held:
        path, size = max(held, key=lambda item: item[1])
        what = "is missing" if not hot.exists() else "is empty"
        raise StoreCorrupt(f"{hot} {what}, but {path} holds {size} bytes of history: refusing to start a new "
                           "store over it; `optseq doctor --rebuild` rebuilds the hot file from the journals")
