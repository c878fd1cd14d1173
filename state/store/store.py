"""The state directory: hot state in one small TinyDB file, history in append-only journals, short transactions.

    optseq.json          TinyDB: meta (schema, seq, ids, each journal's committed end), the levers'
                         views, runs in flight, the sequencer's snapshot of the lever machine
    journal/TABLE.jsonl  runs, decisions, criteria, facts, events: one JSON line per insert/update
    runs/ID/             a run's logs and samples; runs/locks/LEVER.lock while a lever runs
    lock, holder.json    the transaction lock and who holds it

Every write is a transaction under the lock: the journals' new lines are appended and fsynced, then
the hot file is replaced atomically with `ends` reaching past them. That replace is the commit: a
writer killed before it leaves a journal tail nobody counts (the next writer cuts it off), and a
reader, who never locks, reads the hot file and then each journal only up to its committed end. So
the cost of a write does not grow with history, and a command that needs only the hot state (status,
a record) never reads the journals at all.

Store is this module's opening and reading, with its writes and transactions from `writing` and its
runs in flight (recovery, detached runs) from `inflight`; the names are in `layout`, the schema
check and the version-1 migration in `schema`, the record rules in `records`, and the one schema every record
read or written is checked against in `shapes`.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tinydb import Query, TinyDB

from optseq.state.store import digest
from optseq.state.store.inflight import RunsInFlight
from optseq.state.store.integrity import check_journals, orphaned_history
from optseq.state.store.journal import Journal
from optseq.state.store.layout import (
    DB_NAME, HISTORY, HOT, JOURNAL_DIR, META, META_ID, RUNS_DIR, SNAPSHOT, TABLES,
)
from optseq.state.store.locks import TransactionLock, live_holder, wait_s as default_wait
from optseq.state.store.schema import check_schema
from optseq.state.store.settled import HEADS, LATE, chained, indexed, settled
from optseq.state.store.storage import (
    AtomicJSONStorage, StoreCorrupt, StoreError, StoreReadOnly, StoreUnwritable, dump,
)
from optseq.state.store.locks import StoreLocked
from optseq.state.store.writing import Writing

__all__ = ["Store", "StoreError", "StoreCorrupt", "StoreLocked", "StoreReadOnly", "StoreUnwritable"]

MODES = ("write", "read", "auto")


class Store(Writing, RunsInFlight):
    """The optseq state directory (see the module docstring).

    Any number of processes open it at once. Reads see the store as of the last `refresh()` (every
    transaction refreshes first). Every call that writes is one transaction, or part of the
    enclosing `batch()`, which commits once at its end or not at all. Every record carries `seq`
    (strictly increasing across all tables, so history replays in order), `at` and `id`.
    """

    def __init__(self, directory: Path, readonly: bool, wait_s: float | None = None,
                 on_wait: Callable[[str], None] | None = None):
        self.directory = directory
        self.path = directory / DB_NAME
        self.readonly = readonly
        """True when opened with mode "read", or "auto" on a directory this process cannot write."""
        self.wait_s = default_wait() if wait_s is None else wait_s
        self.on_wait = on_wait
        self.storage = AtomicJSONStorage(self.path, readonly=readonly)
        self.journals = {t: Journal(directory / JOURNAL_DIR / f"{t}.jsonl", t) for t in HISTORY}
        self._lock = TransactionLock(directory)
        self._mutex = threading.RLock()
        self._depth = 0
        self._broken = False
        self._closed = False
        self._snapshot: dict | None = None
        self._db = self._fresh_db()
        self._legacy: dict | None = None
        """A version-1 file opened read-only: its tables, served as they are."""
        self.recovered: list[dict[str, Any]] = []
        """Runs this open found in flight with their process gone, now `interrupted` (with their pgid)."""
        self.auto = False
        """Opened with mode "auto": a reader, which writes only what it can (recovery, a snapshot)."""
        self.degraded: str | None = None
        """Why an "auto" open that could not write went on read-only (a full disk), for the caller to say."""

    @property
    def holder(self) -> dict[str, Any] | None:
        """Who holds the transaction lock right now (for messages), or None."""
        return live_holder(self.directory)

    @classmethod
    def open(cls, directory: str | os.PathLike, mode: str = "write", wait_s: float | None = None,
             on_wait: Callable[[str], None] | None = None) -> Store:
        """Open (creating it when writing) the state directory.

        "write" needs a writable directory; "auto" opens read-only where it cannot write; "read"
        never writes and never creates anything. Opening takes no lock for longer than a transaction.
        """
        if mode not in MODES:
            raise ValueError(f"store mode must be one of {', '.join(MODES)}, not {mode!r}")
        directory = Path(directory).expanduser()
        readonly = mode == "read"
        if not readonly:
            try:
                _make_writable_directory(directory)
            except StoreUnwritable:
                if mode == "write":
                    raise
                readonly = True
        store = cls(directory, readonly, wait_s, on_wait)
        store.auto = mode == "auto"
        try:
            store._start()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            self.storage.close()
            self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.directory}{' read-only' if self.readonly else ''}>"

    # ---- reading -------------------------------------------------------------------------

    def all(self, table: str) -> list[dict[str, Any]]:
        """Every record of a table in id order, each with `id` (a shallow copy: do not change nested values)."""
        with self._mutex:
            self._check_table(table)
            if table in HOT:
                return [{"id": doc.doc_id, **doc} for doc in self._db.table(table).all()]
            return [dict(r) for _, r in sorted(self._records(table).items())]

    def stream(self, table: str) -> Iterator[dict[str, Any]]:
        """Every record of a table in id order, as `all` gives them, each as soon as it is read and settled
        (state/store/settled.py): the first comes at once and memory stays bounded however long the history."""
        with self._mutex:
            self._check_table(table)
            if table in HOT or self._legacy is not None:
                records, journal = self.all(table), None
            else:
                journal, end = self.journals[table], int(self.ends().get(table, 0))
                late = (self._meta().get(LATE) or {}).get(table) \
                    if not journal.pending and indexed(self._meta(), table) else None
        if journal is None:
            yield from records
        else:
            yield from (dict(r) for r in settled(journal, end, late))

    def lever_records(self, table: str, lever: str) -> list[dict[str, Any]] | None:
        """One lever's records of a history table in id order, as `find(table, lever=…)` gives them, read by the
        lever's chain alone (state/store/settled.py); None where the journal keeps no chains (read it whole)."""
        with self._mutex:
            self._check_table(table)
            meta = self._meta()
            heads, late = (meta.get(HEADS) or {}).get(table), (meta.get(LATE) or {}).get(table)
            if table in HOT or self._legacy is not None or heads is None or late is None \
                    or self.journals[table].pending or not indexed(meta, table):
                return None
            journal, end = self.journals[table], int(self.ends().get(table, 0))
        return [dict(r) for r in chained(journal, end, heads.get(lever), lever, late)]

    def recent(self, table: str) -> dict[str, dict[str, Any]] | None:
        """The newest records of a history table by lever, type and name, with their counts
        (state/store/digest.py): {key: {"n", "last": [records]}}; None where the store keeps no digest of it."""
        with self._mutex:
            self._check_table(table)
            doc = self._db.table(digest.RECENT).get(Query().table == table)
            fresh = self._legacy is None and digest.sound(doc) and indexed(self._meta(), table)
            return json.loads(dump(doc["keys"])) if fresh else None

    def get(self, table: str, doc_id: int) -> dict[str, Any] | None:
        """One record by id, or None."""
        with self._mutex:
            self._check_table(table)
            if table in HOT:
                doc = self._db.table(table).get(doc_id=doc_id)
                return None if doc is None else json.loads(dump({"id": doc.doc_id, **doc}))
            record = self._records(table).get(doc_id)
            return None if record is None else json.loads(dump(record))

    def find(self, table: str, **equals: Any) -> list[dict[str, Any]]:
        """Records whose fields equal all the given values, in id order."""
        return [r for r in self.all(table) if all(k in r and r[k] == v for k, v in equals.items())]

    def meta(self) -> dict[str, Any]:
        """{"schema_version", "seq", "ids", "ends", ...}; empty for a store no writer has initialised yet."""
        with self._mutex:
            self._check_open()
            doc = self._db.table(META).get(doc_id=META_ID)
            return {} if doc is None else json.loads(dump(doc))

    def ends(self) -> dict[str, int]:
        """Each journal's committed end, in bytes, as of the last refresh."""
        return dict(self._meta().get("ends") or {})

    def since(self, ends: Mapping[str, int]) -> list[tuple[str, dict[str, Any]]]:
        """Journal lines committed after `ends` (what a snapshot or an earlier read reflected), in seq order.

        Each is (table, line) with line {"op": "i" | "u" | "r", "id", "seq", "at", "r": fields}.
        """
        with self._mutex:
            self._check_open()
            now = self.ends()
            out = []
            for table, journal in self.journals.items():
                start, end = int(ends.get(table, 0)), int(now.get(table, 0))
                if end > start:
                    out += [(table, line) for line in journal.lines(start, end)]
            out.sort(key=lambda item: item[1].get("seq") or 0)
            return out

    def kept(self, name: str) -> dict[str, Any] | None:
        """The document last kept under `name` with `keep`, or None."""
        with self._mutex:
            self._check_open()
            doc = self._db.table(name).get(doc_id=1) if name in self._db.tables() else None
            return None if doc is None else json.loads(dump(doc))

    def snapshot(self) -> dict | None:
        """The snapshot last put with `put_snapshot`, with the `ends` and `seq` it reflects; None if none."""
        with self._mutex:
            doc = self._db.table(SNAPSHOT).get(doc_id=1)
            return None if doc is None else dict(doc)

    def refresh(self) -> bool:
        """Follow other processes' commits: re-read the hot file if it changed. True when it had."""
        with self._mutex:
            self._check_open()
            if self._depth:
                return False
            before = self.storage.signature
            data = self.storage.read()
            changed = self.storage.signature != before
            if changed:
                # another writer's file: checked like one opened (a hot file gone beside history is no new store)
                if check_schema(self.path, data or {}) is None:
                    orphaned_history(self.path, self.journals)
                self._db = self._fresh_db()
            return changed

    def reload(self) -> None:
        """Drop every cache so the next read comes from the files."""
        with self._mutex:
            self._check_open()
            if self._depth:
                raise StoreError(f"cannot reload {self.path} inside a batch")
            self.storage.discard()
            self._db = self._fresh_db()
            for journal in self.journals.values():
                journal.loaded, journal.folded, journal.records = False, 0, {}

    def run_dir(self, run_id: str | int) -> Path:
        """`runs/<run_id>/` for a run's log and large sample files; created when the store is writable."""
        name = str(run_id)
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ValueError(f"run id {name!r} cannot name a directory under {self.directory / RUNS_DIR}")
        path = self.directory / RUNS_DIR / name
        if not self.readonly:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreUnwritable(f"cannot create {path}: {e.strerror or e}") from None
        return path

    # ---- internals -----------------------------------------------------------------------

    def _start(self) -> None:
        data = self.storage.read() or {}
        meta = check_schema(self.path, data)
        # every open, reading or writing: a lost hot file is not a new store, and a journal is as committed
        if meta is None:
            orphaned_history(self.path, self.journals)
        elif meta.get("schema_version") != 1:
            check_journals(self.directory, self.journals, meta)
        if self.readonly:
            if meta is not None and meta.get("schema_version") == 1:
                self._legacy = data
            return
        try:
            if meta is None or meta.get("schema_version") == 1 or self.needs_recovery():
                # the first transaction initialises (or migrates) the hot file; a dead process's runs are recovered
                self.recovered = self.recover_interrupted()
            runs = self.directory / RUNS_DIR
            try:
                runs.mkdir(exist_ok=True)
            except OSError as e:
                raise StoreUnwritable(f"cannot create {runs}: {e.strerror or e}") from None
        except StoreUnwritable as exc:
            if not self.auto:
                raise
            self.read_only_now(exc)

    def read_only_now(self, why: StoreError) -> None:
        """A reader that cannot write (a full disk) reads on: what it would have written waits for a writer."""
        self.degraded = f"{why}; read-only until it can write (a writer records what waits)"
        self.readonly = self.storage.readonly = True

    def _records(self, table: str) -> dict[int, dict[str, Any]]:
        if self._legacy is not None:
            return {int(k): {"id": int(k), **v} for k, v in (self._legacy.get(table) or {}).items()}
        return self.journals[table].view(int(self.ends().get(table, 0)))

    def _meta(self) -> dict[str, Any]:
        doc = self._db.table(META).get(doc_id=META_ID)
        if doc is None and self._legacy is not None:
            doc = (self._legacy.get(META) or {}).get(str(META_ID))
        return doc or {}

    def _fresh_db(self) -> TinyDB:
        # A new TinyDB wrapper forgets the tables' cached next ids and query results.
        return TinyDB(storage=lambda: self.storage)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"store {self.directory} is closed")

    def _check_table(self, table: str) -> None:
        self._check_open()
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r} in {self.path} (tables: {', '.join(TABLES)})")

    def _check_writable(self, table: str | None = None) -> None:
        if table is None:
            self._check_open()
        else:
            self._check_table(table)
        if self.readonly:
            what = f"write to {table!r}" if table else "write"
            raise StoreReadOnly(f"store {self.directory} is open read-only; cannot {what}")


def _make_writable_directory(directory: Path) -> None:
    if (directory.exists() or directory.is_symlink()) and not directory.is_dir():
        raise StoreUnwritable(f"store directory {directory} is {what_path(directory)}, not a folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreUnwritable(f"cannot create store directory {directory}: {e.strerror or e}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreUnwritable(f"store directory {directory} is not writable; open it read-only instead")


def what_path(path: Path) -> str:
    """What a path that is not a folder is, for a message about it."""
    try:
        path.stat()
    except OSError as e:  # a symlink loop, a link to nothing
        return f"a link that leads nowhere ({e.strerror or e})"
    return "a file"
