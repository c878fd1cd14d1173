"""What the store committed, checked on every open: the hot file's meta, each journal's committed bytes against
the checksum the hot file keeps of them, and, when they differ, a scan that says where the damage is.

The model is git's and SQLite's: detect, refuse in one line naming the file and the byte offset, never repair by
guessing. Reading every committed byte on every open would make each command linear in history (a 100,000-run
store holds half a gigabyte of journals), so, as git's index does for the work tree, the writer keeps each
journal's stat beside its checksum (`stamps`: inode, size, mtime, ctime, taken once the commit's bytes were
appended and fsynced): an open whose stat of a journal is that stamp knows no byte of it was written since it was
checked, and reads none; any other journal is read whole and checked against its sum, as before. A stamp is
trusted only when the writer took it `RACY_NS` after the journal's last change (git's "racily clean": a
same-size overwrite inside the file system's timestamp granularity would keep mtime and ctime), which the
writer waits out when it can (`settle`). A missing or empty hot file beside journals that hold history is damage too, not a new store: taking
it for one would cut every journal to a committed end of 0. `optseq doctor --rebuild` (state/store/doctor.py)
is the one way to rebuild the hot file, and it keeps a copy of what it replaces.
"""
from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

from optseq.state.store.shape_check import line_problem as shape_problem, loads
from optseq.state.store.rows import meta as meta_of
from optseq.state.store.shapes import FIELDS
from optseq.state.store.storage import StoreCorrupt

SUMS = "sums"
"""The meta key holding each journal's CRC-32 over its committed bytes [0, end): {table: crc}."""
STAMPS = "stamps"
"""The meta key holding each journal's stat as the writer left it: {table: [ino, size, mtime_ns, ctime_ns,
stamped_ns]}, the last being when it was taken (see the module docstring)."""
RACY_NS = 20_000_000
"""How long after a journal's last change its stat is a stamp: above the coarse clock's tick (1-10 ms) that
Linux file systems take timestamps from. A file system that keeps whole seconds never gets a trusted stamp
(`coarse`), so its journals are read on every open, as before stamps."""
CHUNK = 1 << 20
SETTLE_BYTES = 16 << 20
"""A journal this long is worth a writer's wait (`settle`): checking it whole takes longer than RACY_NS."""
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
    stamps = meta.get(STAMPS)
    if stamps is not None and (not isinstance(stamps, dict) or not all(
            isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in v)
            for v in stamps.values())):
        return f"meta.{STAMPS} is {json.dumps(stamps)[:40]}, not an object of stats"
    late = meta.get("late")
    if late is not None and (not isinstance(late, dict) or not all(
            isinstance(entries, dict) and all(isinstance(v, list) and all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v) for v in entries.values())
            for entries in late.values())):
        return f"meta.late is {json.dumps(late)[:40]}, not an object of tables' late lines"
    for key in ("ends", "ids", SUMS, "indexed"):
        value = meta.get(key)
        if value is None and key in (SUMS, "indexed"):
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
    records: list[dict[str, Any]] = []
    at, line_no = 0, 0
    while at < len(raw):
        line_no += 1
        stop = raw.find(b"\n", at)
        if stop < 0:
            return records, at, f"line {line_no} has no end (an unfinished append)"
        try:
            line = loads(raw[at:stop])
        except (UnicodeDecodeError, ValueError):
            return records, at, f"line {line_no} is not JSON"
        problem = line_problem(line) or (shape_problem(path.stem, line) if path.stem in FIELDS else None)
        if problem:
            return records, at, f"line {line_no}: {problem}"
        records.append(line)
        at = stop + 1
    return records, at, None


def stat_of(path: Path) -> list[int] | None:
    """[ino, size, mtime_ns, ctime_ns] of a journal, None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def coarse(stat: list[int]) -> bool:
    """Timestamps in whole seconds (FAT, HFS+, some network file systems): no stamp of it can be trusted."""
    return stat[2] % 1_000_000_000 == 0 and stat[3] % 1_000_000_000 == 0


def stamp(path: Path) -> list[int] | None:
    """The journal's stamp as of now (its stat and the time it was taken)."""
    stat = stat_of(path)
    return None if stat is None else [*stat, time.time_ns()]


def settle(paths: list[Path]) -> None:
    """Wait until every journal's last change is RACY_NS old, so the stamps taken next are trusted (at most
    RACY_NS, and only for journals this commit wrote: their mtime is now). A journal under SETTLE_BYTES is left
    racy: reading it whole at the next open costs about the wait, and a writer holding the lock no longer than it
    must lets other writers in."""
    newest = max((s[2] for s in map(stat_of, paths) if s is not None and not coarse(s) and s[1] >= SETTLE_BYTES),
                 default=None)
    if newest is not None:
        wait = newest + RACY_NS - time.time_ns()
        if wait > 0:
            time.sleep(wait / 1e9)


def stamped(path: Path, stamp_: Any) -> bool:
    """The journal is byte for byte as it was when the writer stamped it (see the module docstring)."""
    if not isinstance(stamp_, list) or len(stamp_) != 5:
        return False
    stat = stat_of(path)
    return (stat is not None and stat == stamp_[:4] and not coarse(stat)
            and stamp_[4] - stat[2] >= RACY_NS and stamp_[4] - stat[3] >= RACY_NS)


def check_journals(directory: Path, journals: dict, meta: dict[str, Any], trust_stamps: bool = True) -> None:
    """Every journal's committed bytes as the hot file says they were written: StoreCorrupt naming the file and
    the byte offset otherwise. A journal whose stat is its trusted stamp is not read (see the module docstring);
    any other is read once against its checksum. One whose stat is not even the stamp's (bytes its writer did not
    leave: an editor, another program) is parsed too, each line checked against the schema (shapes.py), so a
    record of the wrong shape is refused by every command at its open, in the line a reader of it would give."""
    found = meta_of(meta)  # meta_problem has passed it
    ends, sums, stamps = found.ends, found.sums or {}, found.stamps or {}
    for table, journal in journals.items():
        end = ends.get(table, 0)
        if trust_stamps and table in sums and stamped(journal.path, stamps.get(table)) \
                and stamps[table][1] == end:
            continue
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
        if not (table in stamps and stat_of(journal.path) == stamps[table][:4]):
            # bytes this store's writer did not leave (an editor, another program, a writer killed mid-append):
            # their checksum may be right and their records still of the wrong shape, so every command reads them
            # here, each line checked as a reader would check it, and refuses in the same line
            for _ in journal.iter_lines(0, end):
                pass


def orphaned_history(hot: Path, journals: dict) -> None:
    """No hot file (or an empty one) is a new store only where no journal holds history: StoreCorrupt otherwise."""
    held = [(j.path, os.path.getsize(j.path)) for j in journals.values() if j.path.is_file()]
    held = [(path, size) for path, size in held if size]
    if held:
        path, size = max(held, key=lambda item: item[1])
        what = "is missing" if not hot.exists() else "is empty"
        raise StoreCorrupt(f"{hot} {what}, but {path} holds {size} bytes of history: refusing to start a new "
                           "store over it; `optseq doctor --rebuild` rebuilds the hot file from the journals")
