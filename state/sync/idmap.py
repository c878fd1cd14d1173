"""Which local record each other writer's record became: (writer, table, its id there) -> id here, kept as ranges
([its first id, the local first id, how many]), since a segment's inserts of a table take consecutive local ids.
A store holds a map for each writer it imported, so a reference (a decision's runs, an event's run, an update)
made in any writer's store finds the record here, and a record of this store's own writer is its own id."""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping

from optseq.state.sync.notes import Applied

REFS: dict[str, dict[str, str]] = {"decisions": {"runs": "runs", "supersedes": "decisions"},
                                   "events": {"decision": "decisions", "run": "runs", "by": "decisions"}}
"""The fields of a record that name another record by id, and that record's table (state/: actions.py, moves.py,
code/landing.py write them)."""


class IdMap:
    def __init__(self, applied: Mapping[str, Applied]):
        self.ranges: dict[str, dict[str, list[list[int]]]] = {
            w: {t: [list(r) for r in rs] for t, rs in a.ids.items()} for w, a in applied.items()}
        self._back: dict[str, tuple[list[int], list[tuple[int, str, int, int]]]] | None = None

    def add(self, writer: str, table: str, theirs: int, ours: int) -> None:
        rs = self.ranges.setdefault(writer, {}).setdefault(table, [])
        if rs and rs[-1][0] + rs[-1][2] == theirs and rs[-1][1] + rs[-1][2] == ours:
            rs[-1][2] += 1
        else:
            rs.append([theirs, ours, 1])
        self._back = None

    def local(self, writer: str, table: str, theirs: int) -> int | None:
        rs = self.ranges.get(writer, {}).get(table) or []
        i = bisect_right([r[0] for r in rs], theirs) - 1
        if i >= 0 and rs[i][0] <= theirs < rs[i][0] + rs[i][2]:
            return rs[i][1] + theirs - rs[i][0]
        return None

    def origin(self, table: str, ours: int) -> tuple[str, int] | None:
        """(writer, its id) of a local record another writer made; None for this store's own."""
        if self._back is None:
            self._back = {}
            for w, tables in self.ranges.items():
                for t, rs in tables.items():
                    keys, rows = self._back.setdefault(t, ([], []))
                    rows.extend((r[1], w, r[0], r[2]) for r in rs)
            for t, (keys, rows) in self._back.items():
                rows.sort()
                keys[:] = [r[0] for r in rows]
        keys, rows = self._back.get(table, ([], []))
        i = bisect_right(keys, ours) - 1
        if i >= 0 and rows[i][0] <= ours < rows[i][0] + rows[i][3]:
            return rows[i][1], rows[i][2] + ours - rows[i][0]
        return None

    def of(self, writer: str) -> dict[str, list[list[int]]]:
        return self.ranges.get(writer, {})
