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
from typing import Any

from optseq.state.store.inflight import FINAL
from optseq.state.store.integrity import DOCTOR
from optseq.state.store.journal import INSERT, REPLACE, UPDATE, Journal, fold
from optseq.state.store.storage import StoreCorrupt

LATE = "late"
"""The meta key of the late lines' index (see the module docstring)."""


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

    for at, line in journal.iter_lines(0, end):
        rid = line["id"]
        if at in read_early:
            continue
        late = line["op"] == REPLACE or (line["op"] == UPDATE and rid not in open_ids)
        if rid <= given or (late and at not in late_at.get(rid, ())):
            raise StoreCorrupt(f"{journal.path} changes record {rid} at byte {at} after it was settled, and the "
                               f"hot file's index of late changes does not say so; refusing to use the store so "
                               f"nothing is lost; {DOCTOR}")
        if late:
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
