"""The state directory: one TinyDB file, one writer, atomic writes and a global sequence over every record."""
from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinydb import TinyDB

from state.lock import StoreLocked, WriterLock, describe, live_holder, pid_alive
from state.storage import AtomicJSONStorage, StoreCorrupt, StoreError, StoreReadOnly, StoreUnwritable, dump

__all__ = [
    "Store", "StoreError", "StoreCorrupt", "StoreLocked", "StoreReadOnly", "StoreUnwritable",
    "StoreSchemaError", "RecordNotFound", "SCHEMA_VERSION", "TABLES", "utc_now",
]

SCHEMA_VERSION = 1
"""The layout this code reads and writes; a store with a newer one is refused."""
TABLES = ("levers", "runs", "decisions", "criteria", "facts", "events")
RESERVED = ("id", "seq", "at")
"""Fields the store assigns; records passed in may not set them."""
DB_NAME = "optseq.json"
RUNS_DIR = "runs"
MODES = ("write", "read", "auto")
_META = "meta"
_META_ID = 1


class StoreSchemaError(StoreError):
    """The file's schema_version is missing, invalid or newer than this code."""


class RecordNotFound(StoreError, LookupError):
    """No record with that id in that table."""


def utc_now() -> str:
    """ISO-8601 UTC time with seconds, the store's one timestamp format."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """The optseq state directory: `optseq.json` (TinyDB), `lock` (the writer lock), `runs/` (logs, samples).

    One process writes; any number read. Every call that writes is one atomic file replace, or
    none if it fails; inside `batch()` all writes become one replace at the end. Every record
    carries `seq` (strictly increasing across all tables, so history replays in order), `at`
    (when it was written) and `id` (its TinyDB doc_id). Records handed out are copies.
    """

    def __init__(self, directory: Path, lock: WriterLock | None, holder: dict[str, Any] | None):
        self.directory = directory
        self.path = directory / DB_NAME
        self.readonly = lock is None
        """True when another process holds the writer lock (mode "auto") or mode was "read"."""
        self.holder = lock.info if lock else holder
        """Who holds the writer lock: {pid, started, argv, host}; this process itself when writable."""
        self.storage = AtomicJSONStorage(self.path, readonly=self.readonly)
        self._lock = lock
        self._mutex = threading.RLock()
        self._depth = 0
        self._broken = False
        self._closed = False
        self._db = self._fresh_db()

    @classmethod
    def open(cls, directory: str | os.PathLike, mode: str = "write") -> Store:
        """Open (creating it when writing) the state directory.

        "write" takes the writer lock or raises StoreLocked naming the holder; "auto" falls back
        to read-only when the lock is taken; "read" never locks and never creates anything.
        """
        if mode not in MODES:
            raise ValueError(f"store mode must be one of {', '.join(MODES)}, not {mode!r}")
        directory = Path(directory).expanduser()
        lock = holder = None
        if mode == "read":
            holder = live_holder(directory)
        else:
            _make_writable_directory(directory)
            try:
                lock = WriterLock.acquire(directory)
            except StoreLocked as e:
                if mode == "write":
                    raise
                holder = e.holder
        store = cls(directory, lock, holder)
        try:
            store._start()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        """Release the writer lock; the store cannot be used afterwards."""
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            self.storage.close()
            if self._lock:
                self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.directory} {'read-only' if self.readonly else 'writer'}>"

    # ---- reading -------------------------------------------------------------------------

    def all(self, table: str) -> list[dict[str, Any]]:
        """Every record of a table in id order, each with `id`."""
        with self._mutex:
            self._check_table(table)
            return _copy([{"id": doc.doc_id, **doc} for doc in self._db.table(table).all()])

    def get(self, table: str, doc_id: int) -> dict[str, Any] | None:
        """One record by id, or None."""
        with self._mutex:
            self._check_table(table)
            doc = self._db.table(table).get(doc_id=doc_id)
            return None if doc is None else _copy({"id": doc.doc_id, **doc})

    def find(self, table: str, **equals: Any) -> list[dict[str, Any]]:
        """Records whose fields equal all the given values, in id order."""
        return [r for r in self.all(table) if all(k in r and r[k] == v for k, v in equals.items())]

    def meta(self) -> dict[str, Any]:
        """{"schema_version", "seq"}; empty for a store no writer has initialised yet."""
        with self._mutex:
            self._check_open()
            doc = self._db.table(_META).get(doc_id=_META_ID)
            return {} if doc is None else dict(doc)

    def reload(self) -> None:
        """Drop every cache so the next read comes from the file (reads already follow the file's changes)."""
        with self._mutex:
            self._check_open()
            if self._depth:
                raise StoreError(f"cannot reload {self.path} inside a batch")
            self.storage.discard()
            self._db = self._fresh_db()

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

    # ---- writing -------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[Store]:
        """Buffer every write in the block and write them as one atomic replace at its end.

        Nothing is written if the block raises. Batches nest; only the outermost one writes,
        and if a write inside failed part-way the whole batch is discarded with StoreError.
        Other threads wait for the batch to finish.
        """
        with self._mutex:
            self._check_writable()
            outer = self._depth == 0
            if outer:
                self.storage.buffering, self._broken = True, False
            self._depth += 1
            try:
                yield self
            except BaseException:
                if outer:
                    self._rollback()
                else:
                    self._broken = True
                raise
            else:
                if outer and self._broken:
                    self._rollback()
                    raise StoreError(f"batch on {self.path} discarded: a write inside it failed")
                if outer:
                    try:
                        self.storage.commit()
                    except BaseException:
                        self._rollback()
                        raise
            finally:
                self._depth -= 1
                if outer:
                    self.storage.buffering = False

    def append(self, table: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """Add a record; returns it as stored, with `id`, `seq` and `at`."""
        with self._mutex:
            self._check_writable(table)
            rec = _clean(table, record)
            with self.batch():
                rec["seq"], rec["at"] = self._next_seq(), utc_now()
                doc_id = self._db.table(table).insert(rec)
            return _copy({"id": doc_id, **rec})

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Set some fields of one record (its seq and at stay); returns the updated record."""
        with self._mutex:
            self._check_writable(table)
            changes = _clean(table, fields)
            if self._db.table(table).get(doc_id=doc_id) is None:
                raise RecordNotFound(f"no record {doc_id} in table {table!r} of {self.path}")
            with self.batch():
                self._db.table(table).update(changes, doc_ids=[doc_id])
            return self.get(table, doc_id)

    def upsert(self, table: str, key_field: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the record, or replace the one whose `key_field` has the same value (keeping its id).

        A replaced record gets a new seq and at: it is the latest word on that key.
        """
        with self._mutex:
            self._check_writable(table)
            rec = _clean(table, record)
            if key_field not in rec:
                raise ValueError(f"upsert into {table!r} of {self.path}: record has no key field {key_field!r}")
            matches = self.find(table, **{key_field: rec[key_field]})
            if len(matches) > 1:
                raise StoreError(
                    f"{self.path}: {len(matches)} records in {table!r} have {key_field}={rec[key_field]!r}; "
                    "upsert needs at most one"
                )
            with self.batch():
                rec["seq"], rec["at"] = self._next_seq(), utc_now()
                if matches:
                    doc_id = matches[0]["id"]
                    self._db.table(table).update(_replace_with(rec), doc_ids=[doc_id])
                else:
                    doc_id = self._db.table(table).insert(rec)
            return _copy({"id": doc_id, **rec})

    def recover_interrupted(self, is_alive: Callable[[Any], bool] = pid_alive) -> list[dict[str, Any]]:
        """Mark runs left "running" by a process that is gone as "interrupted"; returns them.

        Called on every open for writing: a run can only be running if its process still is.
        """
        with self._mutex:
            self._check_writable("runs")
            gone = [r for r in self.find("runs", status="running") if not is_alive(r.get("pid"))]
            if not gone:
                return []
            ended = utc_now()
            with self.batch():
                return [
                    self.update("runs", r["id"], {
                        "status": "interrupted",
                        "ended": ended,
                        "note": f"optseq stopped while this run was running; its process (pid {r.get('pid')}) is gone",
                    })
                    for r in gone
                ]

    # ---- internals -----------------------------------------------------------------------

    def _start(self) -> None:
        if not self.readonly:
            # Only a writer holding the lock may remove temp files: nobody else can be mid-write.
            self.storage.remove_temp_files()
        meta = self._check_schema()
        if self.readonly:
            return
        if meta is None:
            with self.batch():
                self._db.table(_META).insert({"schema_version": SCHEMA_VERSION, "seq": 0})
        (self.directory / RUNS_DIR).mkdir(exist_ok=True)
        self.recover_interrupted()

    def _check_schema(self) -> dict[str, Any] | None:
        data = self.storage.read() or {}
        meta = data.get(_META, {}).get(str(_META_ID))
        if meta is None:
            if any(data.values()):
                raise StoreSchemaError(f"{self.path} has records but no schema_version; it is not an optseq store")
            return None
        version = meta.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise StoreSchemaError(f"{self.path} has an invalid schema_version {version!r}")
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.path} has schema_version {version}, newer than this optseq understands "
                f"({SCHEMA_VERSION}); upgrade optseq to open it"
            )
        if not isinstance(meta.get("seq"), int):
            raise StoreSchemaError(f"{self.path} has an invalid seq counter {meta.get('seq')!r}")
        return meta

    def _next_seq(self) -> int:
        meta = self._db.table(_META)
        seq = meta.get(doc_id=_META_ID)["seq"] + 1
        meta.update({"seq": seq}, doc_ids=[_META_ID])
        return seq

    def _fresh_db(self) -> TinyDB:
        # A new TinyDB wrapper forgets the tables' cached next ids and query results.
        return TinyDB(storage=lambda: self.storage)

    def _rollback(self) -> None:
        self.storage.discard()
        self._db = self._fresh_db()
        self._broken = False

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
            raise StoreReadOnly(
                f"store {self.directory} is open read-only (writer: {describe(self.holder)}); cannot {what}"
            )


def _make_writable_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreUnwritable(f"cannot create store directory {directory}: {e.strerror or e}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreUnwritable(f"store directory {directory} is not writable; open it read-only instead")


def _clean(table: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A deep, JSON-normalised copy of a record, so later changes by the caller cannot reach the store."""
    if not isinstance(record, Mapping):
        raise TypeError(f"a record for {table!r} must be a mapping, not {type(record).__name__}")
    for key in record:
        if not isinstance(key, str):
            raise TypeError(f"a record for {table!r} has a non-string field name {key!r}")
        if key in RESERVED:
            raise ValueError(f"a record for {table!r} may not set {key!r}; the store assigns it")
    try:
        return json.loads(dump(record))
    except (TypeError, ValueError) as e:
        raise TypeError(f"a record for {table!r} is not JSON data: {e}") from None


def _copy(value: Any) -> Any:
    return json.loads(dump(value))


def _replace_with(record: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def replace(doc: dict[str, Any]) -> None:
        doc.clear()
        doc.update(record)
    return replace
