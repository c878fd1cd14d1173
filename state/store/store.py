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

Store is this module's opening, refreshing and closing, composed of one part per responsibility, each handed the
one open store's files and caches (`hot.Hot`) and the parts it uses, explicitly: its reads (`reading.Reader`), its
transactions (`transaction.Transaction`, under `locks.TransactionLock`), its writes (`writing.Writer`) and its runs
in flight (`inflight.RunsInFlight`: recovery, detached runs); Store's methods of the same names hand each call to
its part. The names are in `layout`, the schema check and the version-1 migration in `schema`, the record rules in
`records`, and the one schema every record read or written is checked against in `shapes`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from optseq.state.store.hot import Hot, Record
from optseq.state.store.inflight import RunsInFlight
from optseq.state.store.integrity import check_journals, orphaned_history
from optseq.state.store.layout import RUNS_DIR
from optseq.state.store.locks import StoreLocked, TransactionLock, live_holder, pid_alive, wait_s as default_wait
from optseq.state.store.reading import Reader
from optseq.state.store.rows import Active, Meta, Recovered
from optseq.state.store.schema import check_schema
from optseq.state.store.storage import StoreCorrupt, StoreError, StoreReadOnly, StoreUnwritable
from optseq.state.store.transaction import Transaction
from optseq.state.record_types import Typed
from optseq.state.store.writing import Writer

__all__ = ["Store", "StoreError", "StoreCorrupt", "StoreLocked", "StoreReadOnly", "StoreUnwritable"]

MODES = ("write", "read", "auto")


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
        self.hot = Hot(directory, readonly)
        self.path, self.storage, self.journals = self.hot.path, self.hot.storage, self.hot.journals
        self.reader = Reader(self.hot)
        self.tx = Transaction(self.hot, TransactionLock(directory), default_wait() if wait_s is None else wait_s,
                              on_wait)
        self.writer = Writer(self.hot, self.tx, self.reader)
        self.inflight = RunsInFlight(self.hot, self.tx, self.writer)
        self.recovered: list[Recovered] = []
        """Runs this open found in flight with their process gone, now `interrupted` (with their pgid)."""
        self.auto = False
        """Opened with mode "auto": a reader, which writes only what it can (recovery, a snapshot)."""
        self.degraded: str | None = None
        """Why an "auto" open that could not write went on read-only (a full disk), for the caller to say."""

    @property
    def readonly(self) -> bool:
        """True when opened with mode "read", or "auto" on a directory this process cannot write."""
        return self.hot.readonly

    @property
    def holder(self) -> dict[str, Any] | None:
        """Who holds the transaction lock right now (for messages), or None."""
        return live_holder(self.directory)

    @classmethod
    def open(cls, directory: str | os.PathLike[str], mode: str = "write", wait_s: float | None = None,
             on_wait: Callable[[str], None] | None = None) -> Store:
        """Open (creating it when writing) the state directory.

        "write" needs a writable directory; "auto" opens read-only where it cannot write; "read"
        never writes and never creates anything. Opening takes no lock for longer than a transaction.
        """
        if mode not in MODES:
            raise ValueError(f"store mode must be one of {', '.join(MODES)}, not {mode!r}")
        path = Path(directory).expanduser()
        readonly = mode == "read"
        if not readonly:
            try:
                _make_writable_directory(path)
            except StoreUnwritable:
                if mode == "write":
                    raise
                readonly = True
        store = cls(path, readonly, wait_s, on_wait)
        store.auto = mode == "auto"
        try:
            store._start()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        with self.hot.mutex:
            if self.hot.closed:
                return
            self.hot.closed = True
            self.storage.close()
            self.tx.lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.directory}{' read-only' if self.readonly else ''}>"

    # ---- each call handed to the part that does it ----------------------------------------------------------

    def all(self, table: str) -> list[Record]:
        return self.reader.all(table)

    def stream(self, table: str) -> Iterator[Record]:
        return self.reader.stream(table)

    def typed(self, table: str) -> Iterator[Typed]:
        return self.reader.typed(table)

    def lever_records(self, table: str, lever: str) -> list[Record] | None:
        return self.reader.lever_records(table, lever)

    def recent(self, table: str) -> dict[str, dict[str, Any]] | None:
        return self.reader.recent(table)

    def get(self, table: str, doc_id: int) -> Record | None:
        return self.reader.get(table, doc_id)

    def find(self, table: str, **equals: Any) -> list[Record]:
        return self.reader.find(table, **equals)

    def meta(self) -> Meta:
        return self.reader.meta()

    def ends(self) -> dict[str, int]:
        return self.hot.ends()

    def since(self, ends: Mapping[str, int]) -> list[tuple[str, Record]]:
        return self.reader.since(ends)

    def kept(self, name: str) -> dict[str, Any] | None:
        return self.reader.kept(name)

    def snapshot(self) -> dict[str, Any] | None:
        return self.reader.snapshot()

    @contextmanager
    def batch(self) -> Iterator[Store]:
        """One transaction for every write in the block (Transaction.batch), the store handed to the block."""
        with self.tx.batch():
            yield self

    transaction = batch

    def append(self, table: str, record: Mapping[str, Any], elsewhere: str | None = None) -> Record:
        return self.writer.append(table, record, elsewhere)

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> Record:
        return self.writer.update(table, doc_id, fields)

    def upsert(self, table: str, key_field: str, record: Mapping[str, Any]) -> Record:
        return self.writer.upsert(table, key_field, record)

    def keep(self, name: str, data: Mapping[str, Any]) -> None:
        self.writer.keep(name, data)

    def put_snapshot(self, data: Mapping[str, Any]) -> None:
        self.writer.put_snapshot(data)

    def active_runs(self) -> list[Active]:
        return self.inflight.active_runs()

    def detached_runs(self) -> list[Active]:
        return self.inflight.detached_runs()

    def recover_interrupted(self, is_alive: Callable[[Any], bool] = pid_alive) -> list[Recovered]:
        return self.inflight.recover_interrupted(is_alive)

    def needs_recovery(self) -> bool:
        return self.inflight.needs_recovery()

    def orphaned(self, active: Active, is_alive: Callable[[Any], bool] = pid_alive) -> bool:
        return self.inflight.orphaned(active, is_alive)

    # ---- following other processes ------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Follow other processes' commits: re-read the hot file if it changed. True when it had."""
        hot = self.hot
        with hot.mutex:
            hot.check_open()
            if hot.depth:
                return False
            before = self.storage.signature
            data = self.storage.read()
            changed = self.storage.signature != before
            if changed:
                # another writer's file: checked like one opened (a hot file gone beside history is no new store)
                if check_schema(self.path, data or {}) is None:
                    orphaned_history(self.path, self.journals)
                hot.db = hot.fresh_db()
            return changed

    def reload(self) -> None:
        """Drop every cache so the next read comes from the files."""
        hot = self.hot
        with hot.mutex:
            hot.check_open()
            if hot.depth:
                raise StoreError(f"cannot reload {self.path} inside a batch")
            self.storage.discard()
            hot.db = hot.fresh_db()
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

    def read_only_now(self, why: StoreError) -> None:
        """A reader that cannot write (a full disk) reads on: what it would have written waits for a writer."""
        self.degraded = f"{why}; read-only until it can write (a writer records what waits)"
        self.hot.readonly = self.storage.readonly = True

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
                self.hot.legacy = data
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
