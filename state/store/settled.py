"""A journal's records in id order, each given out as soon as no later line can change it: `optseq runs --json`
prints its first record at once and holds a bounded window, however long the history.

A record is settled once its insert has been read, unless it is open: a run inserted with a status that is not
final stays open, as it stays in the hot file's runs in flight, until a line gives it a final status. Any other
line that changes a record (an update after it settled, a replace) is late: the writer keeps each late line's
offset in the hot file (`meta.late`, {table: {id: [offset, ...]}}), so the record is given out with those lines
read at once by their offset, and the pass skips them when it reaches them. The index is damage-checked as it is
used: a late offset that holds no line of that record, or a late line (a change to a record not in flight) that
the index does not name, is refused like any damaged journal. A journal written before the writer kept the index
(`meta.late` without that table) is folded whole first, as before.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any, BinaryIO

from optseq.state.store.inflight import FINAL
from optseq.state.store.integrity import DOCTOR
from optseq.state.store.journal import INSERT, PREVIOUS, REPLACE, UPDATE, Journal, fold
from optseq.state.store.rows import Counters
from optseq.state.store.storage import StoreCorrupt

LATE = "late"
"""The meta key of the late lines' index (see the module docstring)."""
INDEXED = "indexed"
"""The meta key saying which committed end of each journal the indexes (late lines, chains, the digest) were
kept up to: a writer that kept none (an older optseq) moves the end past it, and the indexes of that journal are
not used again (it is read whole, and its next writer starts them again where it can)."""
STREAM_CHUNK = 1 << 16
"""Bytes read at a time while streaming: a record is a few KiB, and a window this size keeps what is held for
the lines read ahead (the chunk, its lines, their split) well under a MiB however long the journal."""
HEADS = "heads"
"""The meta key of each journal's levers' chains: {table: {lever: offset of its last line}} (see `chained`)."""


def opens(table: str, line: dict[str, Any]) -> bool:
    """The line inserts a run in flight (the writer's `_track` adds it to the runs in flight)."""
    status = (line.get("r") or {}).get("status")
    return table == "runs" and line["op"] == INSERT and bool(status) and status not in FINAL


def closes(line: dict[str, Any]) -> bool:
    return line["op"] == UPDATE and (line.get("r") or {}).get("status") in FINAL


def settled(journal: Journal, end: int, late: dict[str, list[int]] | None) -> Iterator[dict[str, Any]]:
    """The journal's records as of `end`, in id order (as `Journal.view` holds them), each as soon as it settles."""
    if late is None:
        yield from (record for _, record in sorted(journal.view(end).items()))
        return
    table = journal.table
    late_at = {int(rid): sorted(offsets) for rid, offsets in late.items()}
    pending: dict[int, dict[str, Any]] = {}
    waiting: list[int] = []
    open_ids: set[int] = set()
    read_early: set[int] = set()
    seen_late: set[int] = set()
    given = 0

    def give(rid: int, at: int) -> dict[str, Any]:
        for offset in late_at.get(rid, ()):
            if offset > at:  # a later line: read it now, skip it when the pass gets there
                fold(pending, journal.line_at(offset, rid, end))
                read_early.add(offset)
            elif offset not in seen_late:  # the pass went by it: it must have met that very line
                raise StoreCorrupt(f"{journal.path} has no line of record {rid} at byte {offset}, where the hot "
                                   f"file's index of late changes says it is; refusing to use the store so nothing "
                                   f"is lost; {DOCTOR}")
        return pending.pop(rid)

    for at, line in journal.iter_lines(0, end, STREAM_CHUNK):
        rid = line["id"]
        if at in read_early:
            continue
        changed_late = line["op"] == REPLACE or (line["op"] == UPDATE and rid not in open_ids)
        if rid <= given or (changed_late and at not in late_at.get(rid, ())):
            raise StoreCorrupt(f"{journal.path} changes record {rid} at byte {at} after it was settled, and the "
                               f"hot file's index of late changes does not say so; refusing to use the store so "
                               f"nothing is lost; {DOCTOR}")
        if changed_late:
            seen_late.add(at)
        if rid not in pending:
            if line["op"] == UPDATE:  # of a record never inserted: folding drops it, as `view` does
                continue
            heapq.heappush(waiting, rid)
        fold(pending, line)
        if opens(table, line):
            open_ids.add(rid)
        elif closes(line):
            open_ids.discard(rid)
        while waiting and waiting[0] not in open_ids:
            given = heapq.heappop(waiting)
            yield give(given, at)
    while waiting:
        given = heapq.heappop(waiting)
        yield give(given, end)


def chained(journal: Journal, end: int, head: int | None, lever: str,
            late: dict[str, list[int]]) -> list[dict[str, Any]]:
    """One lever's records as of `end`, in id order, read by its chain alone: every line the writer wrote for the
    lever (an insert naming it, a change to its run in flight) points back at the lever's line before it (`pl`),
    and the hot file keeps the last one (`meta.heads`); the late changes of its records come from the late
    lines' index. Nothing else of the journal is read. A chain that leads anywhere but to a line of that lever,
    or backwards to no earlier line, is refused like any damaged journal."""
    if head is None:
        return []  # the lever wrote no line to this journal (which may not even exist)
    with open(journal.path, "rb") as f:
        return _chained(journal, end, head, lever, late, f)


def _chained(journal: Journal, end: int, head: int | None, lever: str, late: dict[str, list[int]],
             f: BinaryIO) -> list[dict[str, Any]]:
    found: list[tuple[int, dict[str, Any]]] = []
    ids: set[int] = set()
    at = head
    while at is not None:
        line = journal.line_at(at, None, end, f)
        found.append((at, line))
        previous = line.get(PREVIOUS)
        if line["op"] == INSERT:
            ids.add(line["id"])
            mine = (line.get("r") or {}).get("lever") == lever
        else:
            mine = line["op"] == UPDATE
        if not mine or (previous is not None and (not isinstance(previous, int) or not 0 <= previous < at)):
            raise StoreCorrupt(f"{journal.path}: the chain of lever {lever!r} leads to byte {at}, which is no line of "
                               f"it; refusing to use the store so nothing is lost; {DOCTOR}")
        at = previous
    if any(line["id"] not in ids for _, line in found):
        stray = next(at for at, line in found if line["id"] not in ids)
        raise StoreCorrupt(f"{journal.path}: the chain of lever {lever!r} holds a change at byte {stray} to a record "
                           f"it never inserted; refusing to use the store so nothing is lost; {DOCTOR}")
    for rid in ids:
        found += [(offset, journal.line_at(offset, rid, end, f)) for offset in late.get(str(rid), ())]
    records: dict[int, dict[str, Any]] = {}
    for _, line in sorted(found, key=lambda item: item[0]):
        fold(records, line)
    return [records[rid] for rid in sorted(records) if records[rid].get("lever") == lever]


def indexed(meta: Counters, table: str) -> bool:
    """The indexes of the table reach its committed end (see INDEXED); a store from before INDEXED was kept was
    written by no writer that skipped them."""
    return meta.indexed is None or meta.indexed.get(table) == meta.ends.get(table, 0)
