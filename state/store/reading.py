"""Reading the store: a table's records, one lever's, the newest by key, the meta, the journal lines since a mark,
the kept documents and the snapshot. A reader never locks: it reads the hot file as of the last refresh and each
journal up to its committed end (state/store/store.py)."""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tinydb import Query

from optseq.state.store import digest
from optseq.state.store.hot import Hot, Record
from optseq.state.store.layout import HOT, SNAPSHOT
from optseq.state.store.rows import Meta
from optseq.state.store.settled import chained, indexed, settled
from optseq.state.store.storage import dump
from optseq.state.record_types import Typed, decode


class Reader:
    """The store's reads, over the one open store's `Hot` state."""

    def __init__(self, hot: Hot) -> None:
        self.hot = hot

    def all(self, table: str) -> list[Record]:
        """Every record of a table in id order, each with `id` (a shallow copy: do not change nested values)."""
        hot = self.hot
        with hot.mutex:
            hot.check_table(table)
            if table in HOT:
                return [{"id": doc.doc_id, **doc} for doc in hot.db.table(table).all()]
            return [dict(r) for _, r in sorted(hot.records(table).items())]

    def stream(self, table: str) -> Iterator[Record]:
        """Every record of a table in id order, as `all` gives them, each as soon as it is read and settled
        (state/store/settled.py): the first comes at once and memory stays bounded however long the history."""
        hot = self.hot
        with hot.mutex:  # taken to read where to start, never held while the caller reads on
            hot.check_table(table)
            whole = table in HOT or hot.legacy is not None
            records = self.all(table) if whole else []
            journal, end = hot.journals.get(table), int(hot.ends().get(table, 0))
            meta = hot.meta()
            late = (meta.late or {}).get(table) \
                if not whole and journal is not None and not journal.pending and indexed(meta, table) else None
        if whole or journal is None:
            yield from records
        else:
            yield from (dict(r) for r in settled(journal, end, late))

    def typed(self, table: str) -> Iterator[Typed]:
        """Every record of a history table in id order, as `stream` reads them, each decoded once into its type
        (state/record_types.py): what a reader takes fields of by name."""
        return (decode(table, r) for r in self.stream(table))

    def lever_records(self, table: str, lever: str) -> list[Record] | None:
        """One lever's records of a history table in id order, as `find(table, lever=…)` gives them, read by the
        lever's chain alone (state/store/settled.py); None where the journal keeps no chains (read it whole)."""
        hot = self.hot
        with hot.mutex:
            hot.check_table(table)
            meta = hot.meta()
            heads, late = meta.heads.get(table), (meta.late or {}).get(table)
            if table in HOT or hot.legacy is not None or heads is None or late is None \
                    or hot.journals[table].pending or not indexed(meta, table):
                return None
            journal, end = hot.journals[table], int(hot.ends().get(table, 0))
        return [dict(r) for r in chained(journal, end, heads.get(lever), lever, late)]

    def recent(self, table: str) -> dict[str, dict[str, Any]] | None:
        """The newest records of a history table by lever, type and name, with their counts
        (state/store/digest.py): {key: {"n", "last": [records]}}; None where the store keeps no digest of it."""
        hot = self.hot
        with hot.mutex:
            hot.check_table(table)
            doc = hot.db.table(digest.RECENT).get(Query().table == table)
            if doc is None or isinstance(doc, list) or hot.legacy is not None or not digest.sound(doc) \
                    or not indexed(hot.counters(), table):
                return None
            return json.loads(dump(doc["keys"]))

    def get(self, table: str, doc_id: int) -> Record | None:
        """One record by id, or None."""
        hot = self.hot
        with hot.mutex:
            hot.check_table(table)
            if table in HOT:
                doc = hot.db.table(table).get(doc_id=doc_id)
                return None if doc is None else json.loads(dump({"id": doc.doc_id, **doc}))
            record = hot.records(table).get(doc_id)
            return None if record is None else json.loads(dump(record))

    def find(self, table: str, **equals: Any) -> list[Record]:
        """Records whose fields equal all the given values, in id order."""
        return [r for r in self.all(table) if all(k in r and r[k] == v for k, v in equals.items())]

    def meta(self) -> Meta:
        """The hot file's meta record (rows.Meta: its seq, ids, each journal's end, …); every field its default for a
        store no writer has initialised yet."""
        hot = self.hot
        with hot.mutex:
            hot.check_open()
            return hot.meta()

    def since(self, ends: Mapping[str, int]) -> list[tuple[str, Record]]:
        """Journal lines committed after `ends` (what a snapshot or an earlier read reflected), in seq order.

        Each is (table, line) with line {"op": "i" | "u" | "r", "id", "seq", "at", "r": fields}.
        """
        hot = self.hot
        with hot.mutex:
            hot.check_open()
            now = hot.ends()
            out = []
            for table, journal in hot.journals.items():
                start, end = int(ends.get(table, 0)), int(now.get(table, 0))
                if end > start:
                    out += [(table, line) for line in journal.lines(start, end)]
            out.sort(key=lambda item: item[1].get("seq") or 0)
            return out

    def kept(self, name: str) -> dict[str, Any] | None:
        """The document last kept under `name` with `keep`, or None."""
        hot = self.hot
        with hot.mutex:
            hot.check_open()
            doc = hot.db.table(name).get(doc_id=1) if name in hot.db.tables() else None
            return None if doc is None else json.loads(dump(doc))

    def snapshot(self) -> dict[str, Any] | None:
        """The snapshot last put with `put_snapshot`, with the `ends` and `seq` it reflects; None if none."""
        with self.hot.mutex:
            doc = self.hot.db.table(SNAPSHOT).get(doc_id=1)
            return None if doc is None else dict(doc)
