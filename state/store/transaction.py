"""The store's transaction: the lock, then every write staged, then one commit (the journals' lines appended and
fsynced, then the hot file replaced with `ends` reaching past them), or nothing at all (state/store/store.py)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from optseq.state.store.hot import Hot
from optseq.state.store.integrity import STAMPS, SUMS, check_journals, crc_of, orphaned_history, settle, stamp
from optseq.state.store.journal import Journal
from optseq.state.store.layout import JOURNAL_DIR, META, META_ID, SNAPSHOT
from optseq.state.store.locks import TransactionLock
from optseq.state.store.records import utc_now
from optseq.state.store.rows import Ids, Meta, Seq
from optseq.state.store.schema import SCHEMA_VERSION, check_schema, migrate
from optseq.state.store.settled import HEADS, INDEXED, LATE, indexed
from optseq.state.store.storage import StoreError


class Transaction:
    """Batches over the one open store's `Hot` state, under its `lock`: a writer that meets the lock held waits up
    to `wait_s`, telling `on_wait` once."""

    def __init__(self, hot: Hot, lock: TransactionLock, wait_s: float,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.hot, self.lock, self.wait_s, self.on_wait = hot, lock, wait_s, on_wait
        self.broken = False
        """A write inside the open batch failed part-way: the outermost batch is discarded."""
        self.snapshot: dict[str, Any] | None = None
        """What put_snapshot kept for this commit."""

    @property
    def open(self) -> bool:
        return self.hot.depth > 0

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for every write in the block: the lock, then one commit at its end.

        Nothing is written if the block raises. Batches nest; only the outermost one commits, and
        if a write inside failed part-way the whole batch is discarded with StoreError. Other
        threads wait for the batch to finish; other processes wait for the lock (up to `wait_s`).
        """
        hot = self.hot
        with hot.mutex:
            hot.check_writable()
            outer = hot.depth == 0
            if outer:
                self._begin()
            hot.depth += 1
            try:
                yield
            except BaseException:
                if outer:
                    self._rollback()
                else:
                    self.broken = True
                raise
            else:
                if outer and self.broken:
                    self._rollback()
                    raise StoreError(f"batch on {hot.path} discarded: a write inside it failed")
                if outer:
                    try:
                        self._commit()
                    except BaseException:
                        self._rollback()
                        raise
            finally:
                hot.depth -= 1
                if outer:
                    hot.storage.buffering = False
                    self.lock.release()

    def next_seq(self) -> int:
        seq = self.hot.meta_part(Seq).seq + 1
        self.hot.db.table(META).update({"seq": seq}, doc_ids=[META_ID])
        return seq

    def next_id(self, table: str) -> int:
        ids = dict(self.hot.meta_part(Ids).ids)
        ids[table] = ids.get(table, 0) + 1
        self.hot.db.table(META).update({"ids": ids}, doc_ids=[META_ID])
        return ids[table]

    def _begin(self) -> None:
        hot = self.hot
        self.lock.acquire(self.wait_s, self.on_wait)
        try:
            # only the lock holder may clear a dead writer's leftovers: nobody else is writing
            hot.storage.remove_temp_files()
            hot.storage.discard()
            hot.db = hot.fresh_db()
            data = hot.storage.read() or {}
            hot.storage.buffering, self.broken, self.snapshot = True, False, None
            meta = check_schema(hot.path, data)
            if meta is None:
                orphaned_history(hot.path, hot.journals)  # a lost hot file is not a new store
                hot.db.table(META).insert({"schema_version": SCHEMA_VERSION, "seq": 0, "ids": {}, "ends": {}})
            elif meta["schema_version"] == 1:  # check_schema's: an int there
                migrate(hot.db, hot.journals, hot.directory, data)
            else:  # what this commit stamps must have been sound before it: checked again under the lock
                check_journals(hot.directory, hot.journals, meta)
            (hot.directory / JOURNAL_DIR).mkdir(exist_ok=True)
            ends = hot.ends()
            for table, journal in hot.journals.items():
                journal.cut(ends.get(table, 0))
        except BaseException:
            hot.storage.buffering = False
            self._rollback()
            self.lock.release()
            raise

    def _commit(self) -> None:
        hot = self.hot
        if not hot.storage.dirty and self.snapshot is None and not any(j.pending for j in hot.journals.values()):
            return  # nothing written: an empty transaction leaves the files alone
        meta = hot.meta()
        ends, sums = dict(meta.ends), dict(meta.sums or {})
        written = [table for table, journal in hot.journals.items() if journal.pending]
        chains = {table: dict(heads) for table, heads in meta.heads.items() if indexed(meta, table)}
        for table, journal in hot.journals.items():
            end = ends.get(table, 0)
            if table not in sums:  # a store from before checksums: its committed bytes are taken as they are
                sums[table] = crc_of(journal.path, end)
            if table not in chains and not end:  # the levers' chains are kept from a journal's first line on
                chains[table] = {}
            ends[table], sums[table] = journal.commit(end, sums[table], chains.get(table))
        late = _late_index(meta, hot.journals)
        marks = {table: ends[table] for table in hot.journals}
        settle([hot.journals[table].path for table in written])
        stamps = {table: s for table, j in hot.journals.items() if (s := stamp(j.path)) is not None}
        hot.db.table(META).update({"ends": ends, SUMS: sums, STAMPS: stamps, LATE: late, HEADS: chains,
                                   INDEXED: marks, "last_at": utc_now()}, doc_ids=[META_ID])
        if self.snapshot is not None:
            snapshots = hot.db.table(SNAPSHOT)
            snapshots.truncate()
            snapshots.insert({"ends": ends, "seq": meta.seq, "data": self.snapshot})
        try:
            hot.storage.commit()
        except BaseException:
            # the journals hold lines no hot file counts: this process must not show them (the next writer cuts
            # them off, and hands their ids out again)
            for table in written:
                hot.journals[table].forget()
            raise

    def _rollback(self) -> None:
        hot = self.hot
        for journal in hot.journals.values():
            journal.discard()
        hot.storage.discard()
        hot.db = hot.fresh_db()
        self.broken = False
        self.snapshot = None


def _late_index(meta: Meta, journals: dict[str, Journal]) -> dict[str, dict[str, list[int]]]:
    """meta.late after this commit (state/store/settled.py): each table's late lines, kept from its first line on;
    a journal that held history before the index was kept stays out of it (it is read whole, as before)."""
    before = meta.late or {}
    late = {}
    for table, journal in journals.items():
        if (table not in before or not indexed(meta, table)) and meta.ends.get(table, 0):
            continue
        entries = dict(before.get(table) or {})
        for rid, offset in journal.late_written:
            entries[str(rid)] = [*entries.get(str(rid), ()), offset]
        late[table] = entries
    return late
