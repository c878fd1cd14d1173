"""One open store's files and what is cached of them: the hot file's storage and TinyDB view, the journals, the
mutex, whether a batch is open. The store's reader, transactions, writer and runs in flight are each handed this
one object (state/store/store.py composes them); none reaches into another."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tinydb import TinyDB

from optseq.state.store.journal import Journal
from optseq.state.store.layout import DB_NAME, HISTORY, JOURNAL_DIR, META, META_ID, TABLES
from optseq.state.store.rows import K, Counters, Ends, Meta, counters as counters_of, meta as meta_of, part
from optseq.state.store.storage import AtomicJSONStorage, StoreError, StoreReadOnly

Record = dict[str, Any]
"""A record as the store gives it out: its fields, with `id`, `seq` and `at`."""


class Hot:
    """The state one open store's parts share (see the module docstring)."""

    def __init__(self, directory: Path, readonly: bool) -> None:
        self.directory = directory
        self.path = directory / DB_NAME
        self.readonly = readonly
        """True when opened with mode "read", or "auto" on a directory this process cannot write."""
        self.storage = AtomicJSONStorage(self.path, readonly=readonly)
        self.journals: dict[str, Journal] = {t: Journal(directory / JOURNAL_DIR / f"{t}.jsonl", t) for t in HISTORY}
        self.mutex = threading.RLock()
        self.depth = 0
        """How many batches are open, nested (the outermost holds the lock and commits)."""
        self.closed = False
        self.legacy: dict[str, Any] | None = None
        """A version-1 file opened read-only: its tables, served as they are."""
        self.db = self.fresh_db()

    def fresh_db(self) -> TinyDB:
        # A new TinyDB wrapper forgets the tables' cached next ids and query results.
        return TinyDB(storage=lambda: self.storage)

    def meta_doc(self) -> dict[str, Any]:
        """The hot file's meta record as it is now (inside a batch: with this transaction's changes)."""
        doc = self.db.table(META).get(doc_id=META_ID)
        if doc is None and self.legacy is not None:
            doc = (self.legacy.get(META) or {}).get(str(META_ID))
        return doc or {}

    def meta(self) -> Meta:
        """The meta record as its readers read it (rows.py): checked as the file was read, decoded here."""
        return meta_of(self.meta_doc())

    def counters(self) -> Counters:
        """The meta record's counters and ends alone (rows.py): what each write and read asks, decoded without the
        indexes."""
        return counters_of(self.meta_doc())

    def meta_part(self, kind: type[K]) -> K:
        """One field of the meta record (rows.Seq, Ids, Ends): what a write or a read asks each time."""
        return part(self.meta_doc(), kind)

    def ends(self) -> dict[str, int]:
        """Each journal's committed end, in bytes, as of the last refresh."""
        return dict(self.meta_part(Ends).ends)

    def records(self, table: str) -> dict[int, Record]:
        """A history table's records by id, up to the journal's committed end."""
        if self.legacy is not None:
            return {int(k): {"id": int(k), **v} for k, v in (self.legacy.get(table) or {}).items()}
        return self.journals[table].view(int(self.ends().get(table, 0)))

    def check_open(self) -> None:
        if self.closed:
            raise StoreError(f"store {self.directory} is closed")

    def check_table(self, table: str) -> None:
        self.check_open()
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r} in {self.path} (tables: {', '.join(TABLES)})")

    def check_writable(self, table: str | None = None) -> None:
        if table is None:
            self.check_open()
        else:
            self.check_table(table)
        if self.readonly:
            what = f"write to {table!r}" if table else "write"
            raise StoreReadOnly(f"store {self.directory} is open read-only; cannot {what}")
