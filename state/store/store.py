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
"""
from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinydb import Query, TinyDB

from optseq.state.store.journal import INSERT, REPLACE, UPDATE, Journal
from optseq.state.text import clean_text
from optseq.state.store.locks import TransactionLock, live_holder, wait_s as default_wait
from optseq.state.store.storage import (
    AtomicJSONStorage, StoreCorrupt, StoreError, StoreReadOnly, StoreUnwritable, dump,
)
from optseq.state.store.locks import StoreLocked, pid_alive

__all__ = [
    "Store", "StoreError", "StoreCorrupt", "StoreLocked", "StoreReadOnly", "StoreUnwritable",
    "StoreSchemaError", "RecordNotFound", "SCHEMA_VERSION", "TABLES", "HISTORY", "utc_now", "DB_NAME", "RUNS_DIR",
]

SCHEMA_VERSION = 2
"""1: every table in the TinyDB file. 2: history in journals (a version-1 store is migrated on first write)."""
HISTORY = ("runs", "decisions", "criteria", "facts", "events")
"""Tables kept in journals: they grow with every run."""
HOT = ("levers",)
TABLES = ("levers", *HISTORY)
RESERVED = ("id", "seq", "at")
"""Fields the store assigns; records passed in may not set them."""
FINAL = ("succeeded", "failed", "cancelled", "interrupted", "unavailable", "timeout")
"""Run statuses that end a run: such a run is no longer in flight."""
DB_NAME = "optseq.json"
RUNS_DIR = "runs"
JOURNAL_DIR = "journal"
MODES = ("write", "read", "auto")
_META, _META_ID = "meta", 1
_ACTIVE = "active"
"""Runs in flight (run id, lever, pid): what recovery looks at, instead of every run ever."""
_SNAPSHOT = "snapshot"


class StoreSchemaError(StoreError):
    """The file's schema_version is missing, invalid or newer than this code."""


class RecordNotFound(StoreError, LookupError):
    """No record with that id in that table."""


def utc_now() -> str:
    """ISO-8601 UTC time with seconds, the store's one timestamp format."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
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
            doc = self._db.table(_META).get(doc_id=_META_ID)
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

    def snapshot(self) -> dict | None:
        """The snapshot last put with `put_snapshot`, with the `ends` and `seq` it reflects; None if none."""
        with self._mutex:
            doc = self._db.table(_SNAPSHOT).get(doc_id=1)
            return None if doc is None else dict(doc)

    def active_runs(self) -> list[dict[str, Any]]:
        """Runs in flight: {run, lever, pid}."""
        with self._mutex:
            return [dict(d) for d in self._db.table(_ACTIVE).all()]

    def refresh(self) -> bool:
        """Follow other processes' commits: re-read the hot file if it changed. True when it had."""
        with self._mutex:
            self._check_open()
            if self._depth:
                return False
            before = self.storage.signature
            self.storage.read()
            changed = self.storage.signature != before
            if changed:
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

    # ---- writing -------------------------------------------------------------------------

    @contextmanager
    def batch(self) -> Iterator[Store]:
        """One transaction for every write in the block: the lock, then one commit at its end.

        Nothing is written if the block raises. Batches nest; only the outermost one commits, and
        if a write inside failed part-way the whole batch is discarded with StoreError. Other
        threads wait for the batch to finish; other processes wait for the lock (up to `wait_s`).
        """
        with self._mutex:
            self._check_writable()
            outer = self._depth == 0
            if outer:
                self._begin()
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
                        self._commit()
                    except BaseException:
                        self._rollback()
                        raise
            finally:
                self._depth -= 1
                if outer:
                    self.storage.buffering = False
                    self._lock.release()

    transaction = batch

    def append(self, table: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """Add a record; returns it as stored, with `id`, `seq` and `at`."""
        with self._mutex:
            self._check_writable(table)
            rec = _clean(table, record)
            with self.batch():
                seq, at = self._next_seq(), utc_now()
                if table in HOT:
                    doc_id = self._db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = self._next_id(table)
                    self.journals[table].stage({"op": INSERT, "id": doc_id, "seq": seq, "at": at, "r": rec})
                    self._track(table, doc_id, rec, new=True)
            return json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Set some fields of one record (its seq and at stay); returns the fields set, with `id`."""
        with self._mutex:
            self._check_writable(table)
            changes = _clean(table, fields)
            with self.batch():
                # a journal record exists exactly when its id was handed out: no need to read the journal
                found = (self._db.table(table).get(doc_id=doc_id) is not None if table in HOT
                         else 1 <= doc_id <= int((self._meta().get("ids") or {}).get(table, 0)))
                if found and table in HOT:
                    self._db.table(table).update(changes, doc_ids=[doc_id])
                elif found:
                    self.journals[table].stage({"op": UPDATE, "id": doc_id, "seq": self._next_seq(), "r": changes})
                    self._track(table, doc_id, changes)
            if not found:  # raised outside the batch, so a refusal does not spoil an enclosing one
                raise RecordNotFound(f"no record {doc_id} in table {table!r} of {self.path}")
            return {"id": doc_id, **changes}

    def upsert(self, table: str, key_field: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the record, or replace the one whose `key_field` has the same value (keeping its id).

        A replaced record gets a new seq and at: it is the latest word on that key.
        """
        with self._mutex:
            self._check_writable(table)
            rec = _clean(table, record)
            if key_field not in rec:
                raise ValueError(f"upsert into {table!r} of {self.path}: record has no key field {key_field!r}")
            with self.batch():
                matches = self.find(table, **{key_field: rec[key_field]})
                if len(matches) > 1:
                    raise StoreError(f"{self.path}: {len(matches)} records in {table!r} have "
                                     f"{key_field}={rec[key_field]!r}; upsert needs at most one")
                seq, at = self._next_seq(), utc_now()
                if table in HOT:
                    if matches:
                        doc_id = matches[0]["id"]
                        self._db.table(table).update(_replace_with({**rec, "seq": seq, "at": at}), doc_ids=[doc_id])
                    else:
                        doc_id = self._db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = matches[0]["id"] if matches else self._next_id(table)
                    self.journals[table].stage({"op": REPLACE if matches else INSERT, "id": doc_id, "seq": seq,
                                                "at": at, "r": rec})
            return json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))

    def put_snapshot(self, data: Mapping[str, Any]) -> None:
        """Keep `data` (the sequencer's machine state) in this transaction's commit, tagged with the `ends`
        and `seq` the commit reaches: what came after it can then be replayed with `since`."""
        with self._mutex:
            self._check_writable()
            if not self._depth:
                raise StoreError("put_snapshot belongs inside a batch")
            self._snapshot = json.loads(dump(dict(data)))

    def recover_interrupted(self, is_alive: Callable[[Any], bool] = pid_alive) -> list[dict[str, Any]]:
        """Runs in flight whose process is gone: "interrupted" when they ran here (returned with their pgid),
        "detached" when they run on a cluster under a submission id (they go on there, and stay `running`
        until a later optseq re-attaches to them)."""
        with self._mutex:
            self._check_writable("runs")
            ended = utc_now()
            with self.batch():
                gone = [a for a in self.active_runs() if _orphaned(a, is_alive)]  # under the lock now
                out = []
                for a in gone:
                    found = {"id": a["run"], "lever": a.get("lever"), "pid": a.get("pid"), "pgid": a.get("pgid")}
                    if a.get("submission_id"):
                        note = (f"optseq (pid {a.get('pid')}) stopped while this run's job "
                                f"{a['submission_id']} ran on the cluster; the next optseq --run re-attaches to it")
                        self.update("runs", a["run"], {"note": note})
                        self._db.table(_ACTIVE).update({"detached": True}, Query().run == a["run"])
                        out.append({**found, "status": "detached", "submission_id": a["submission_id"]})
                        continue
                    note = f"optseq stopped while this run was running; its process (pid {a.get('pid')}) is gone"
                    self.update("runs", a["run"], {"status": "interrupted", "ended": ended, "note": note})
                    out.append({**found, "status": "interrupted"})
                return out

    def detached_runs(self) -> list[dict[str, Any]]:
        """Runs going on on a cluster that no optseq follows now: {run, lever, submission_id}."""
        return [a for a in self.active_runs() if a.get("detached")]

    # ---- internals -----------------------------------------------------------------------

    def _start(self) -> None:
        data = self.storage.read() or {}
        meta = _check_schema(self.path, data)
        if self.readonly:
            if meta is not None and meta.get("schema_version") == 1:
                self._legacy = data
            return
        if meta is None or meta.get("schema_version") == 1 or any(
                _orphaned(a, pid_alive) for a in self._db.table(_ACTIVE).all()):
            # the first transaction initialises (or migrates) the hot file; a dead process's runs are recovered
            self.recovered = self.recover_interrupted()
        (self.directory / RUNS_DIR).mkdir(exist_ok=True)

    def _begin(self) -> None:
        self._lock.acquire(self.wait_s, self.on_wait)
        try:
            # only the lock holder may clear a dead writer's leftovers: nobody else is writing
            self.storage.remove_temp_files()
            self.storage.discard()
            self._db = self._fresh_db()
            data = self.storage.read() or {}
            self.storage.buffering, self._broken, self._snapshot = True, False, None
            meta = _check_schema(self.path, data)
            if meta is None:
                self._db.table(_META).insert({"schema_version": SCHEMA_VERSION, "seq": 0, "ids": {}, "ends": {}})
            elif meta.get("schema_version") == 1:
                self._migrate(data)
            (self.directory / JOURNAL_DIR).mkdir(exist_ok=True)
            ends = self.ends()
            for table, journal in self.journals.items():
                journal.cut(ends.get(table, 0))
        except BaseException:
            self.storage.buffering = False
            self._rollback()
            self._lock.release()
            raise

    def _commit(self) -> None:
        if not self.storage.dirty and self._snapshot is None and not any(j.pending for j in self.journals.values()):
            return  # nothing written: an empty transaction leaves the files alone
        meta = self._meta()
        ends = dict(meta.get("ends") or {})
        for table, journal in self.journals.items():
            ends[table] = journal.commit(int(ends.get(table, 0)))
        self._db.table(_META).update({"ends": ends, "last_at": utc_now()}, doc_ids=[_META_ID])
        if self._snapshot is not None:
            snapshots = self._db.table(_SNAPSHOT)
            snapshots.truncate()
            snapshots.insert({"ends": ends, "seq": meta.get("seq", 0), "data": self._snapshot})
        self.storage.commit()

    def _rollback(self) -> None:
        for journal in self.journals.values():
            journal.discard()
        self.storage.discard()
        self._db = self._fresh_db()
        self._broken = False
        self._snapshot = None

    def _records(self, table: str) -> dict[int, dict[str, Any]]:
        if self._legacy is not None:
            return {int(k): {"id": int(k), **v} for k, v in (self._legacy.get(table) or {}).items()}
        return self.journals[table].view(int(self.ends().get(table, 0)))

    def _track(self, table: str, doc_id: int, fields: dict[str, Any], new: bool = False) -> None:
        """Runs in flight are kept in the hot state, so recovery never reads the runs journal."""
        if table != "runs":
            return
        from tinydb import Query

        active, q = self._db.table(_ACTIVE), Query().run == doc_id
        status = fields.get("status")
        if status in FINAL:
            active.remove(q)
        elif new and status:
            active.insert({"run": doc_id, "lever": fields.get("lever"),
                           **{k: fields[k] for k in ("pid", "pgid") if k in fields}})
        elif not new and any(k in fields for k in ("pid", "pgid", "submission_id")):
            changes = {k: fields[k] for k in ("pid", "pgid", "submission_id") if k in fields}
            if "pid" in fields:  # a process follows it again
                changes["detached"] = False
            active.update(changes, q)

    def _migrate(self, data: dict) -> None:
        """Version 1 kept every table in the TinyDB file: move the history into journals, keep the rest."""
        ids: dict[str, int] = {}
        for table in HISTORY:
            rows = sorted(((int(k), v) for k, v in (data.get(table) or {}).items()), key=lambda kv: kv[0])
            for doc_id, doc in rows:
                fields = {k: v for k, v in doc.items() if k not in ("seq", "at")}
                self.journals[table].stage({"op": INSERT, "id": doc_id, "seq": doc.get("seq"), "at": doc.get("at"),
                                            "r": fields})
                if fields.get("status") not in FINAL and table == "runs" and fields.get("status"):
                    self._db.table(_ACTIVE).insert({"run": doc_id, "lever": fields.get("lever"),
                                                    "pid": fields.get("pid"), "pgid": fields.get("pgid")})
            ids[table] = max((doc_id for doc_id, _ in rows), default=0)
            self._db.drop_table(table)
        (self.directory / JOURNAL_DIR).mkdir(exist_ok=True)
        self._db.table(_META).update({"schema_version": SCHEMA_VERSION, "ids": ids, "ends": {}}, doc_ids=[_META_ID])

    def _meta(self) -> dict[str, Any]:
        doc = self._db.table(_META).get(doc_id=_META_ID)
        if doc is None and self._legacy is not None:
            doc = (self._legacy.get(_META) or {}).get(str(_META_ID))
        return doc or {}

    def _next_seq(self) -> int:
        seq = int(self._meta().get("seq", 0)) + 1
        self._db.table(_META).update({"seq": seq}, doc_ids=[_META_ID])
        return seq

    def _next_id(self, table: str) -> int:
        ids = dict(self._meta().get("ids") or {})
        ids[table] = int(ids.get(table, 0)) + 1
        self._db.table(_META).update({"ids": ids}, doc_ids=[_META_ID])
        return ids[table]

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


def _orphaned(active: Mapping[str, Any], is_alive: Callable[[Any], bool]) -> bool:
    """A run in flight whose process is gone, and that nobody has recovered yet."""
    return not active.get("detached") and not is_alive(active.get("pid"))


def _check_schema(path: Path, data: dict) -> dict[str, Any] | None:
    meta = (data.get(_META) or {}).get(str(_META_ID))
    if meta is None:
        if any(data.values()):
            raise StoreSchemaError(f"{path} has records but no schema_version; it is not an optseq store")
        return None
    version = meta.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreSchemaError(f"{path} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{path} has schema_version {version}, newer than this optseq understands "
            f"({SCHEMA_VERSION}); upgrade optseq to open it")
    if not isinstance(meta.get("seq"), int):
        raise StoreSchemaError(f"{path} has an invalid seq counter {meta.get('seq')!r}")
    return meta


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
        # the last line of defence for text: a lone surrogate would fail the UTF-8 write of the whole commit
        return clean_text(json.loads(dump(record)))
    except (TypeError, ValueError) as e:
        raise TypeError(f"a record for {table!r} is not JSON data: {e}") from None


def _replace_with(record: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def replace(doc: dict[str, Any]) -> None:
        doc.clear()
        doc.update(record)
    return replace

