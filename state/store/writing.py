"""Writing the store: the locked transaction (begin, commit, rollback) and the writes made inside one."""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tinydb import Query

from optseq.state.store import digest
from optseq.state.store.integrity import STAMPS, SUMS, check_journals, crc_of, orphaned_history, settle, stamp
from optseq.state.store.journal import INSERT, REPLACE, UPDATE
from optseq.state.store.layout import ACTIVE, HOT, JOURNAL_DIR, META, META_ID, SNAPSHOT
from optseq.state.store.records import RecordNotFound, clean, replace_with, utc_now
from optseq.state.store.schema import SCHEMA_VERSION, check_schema, migrate
from optseq.state.store.settled import HEADS, INDEXED, LATE, indexed
from optseq.state.store.shape_check import refuse_written
from optseq.state.store.storage import StoreError, dump


class Writing:
    """The Store's writes, mixed into `Store` (its __init__ sets the state used here: `storage`, `journals`,
    `_db`, `_lock`, `_mutex`, `_depth`, `_broken`, `_snapshot`)."""

    @contextmanager
    def batch(self) -> Iterator[Writing]:
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

    def append(self, table: str, record: Mapping[str, Any], elsewhere: str | None = None) -> dict[str, Any]:
        """Add a record; returns it as stored, with `id`, `seq` and `at`. `elsewhere`: the writer whose run this is
        (a sync brought it): in flight there, not here, so recovery never ends it (inflight.py)."""
        with self._mutex:
            self._check_writable(table)
            rec = clean(table, record)
            refuse_written(table, rec)
            with self.batch():
                seq, at = self._next_seq(), utc_now()
                if table in HOT:
                    doc_id = self._db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = self._next_id(table)
                    self.journals[table].stage({"op": INSERT, "id": doc_id, "seq": seq, "at": at, "r": rec},
                                               lever=_lever(rec))
                    self._track(table, doc_id, rec, new=True, elsewhere=elsewhere)
                    self._note(table, {"id": doc_id, **rec, "seq": seq, "at": at})
            return json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Set some fields of one record (its seq and at stay); returns the fields set, with `id`."""
        with self._mutex:
            self._check_writable(table)
            changes = clean(table, fields)
            refuse_written(table, changes, whole=False)
            with self.batch():
                # a journal record exists exactly when its id was handed out: no need to read the journal
                found = (self._db.table(table).get(doc_id=doc_id) is not None if table in HOT
                         else 1 <= doc_id <= int((self._meta().get("ids") or {}).get(table, 0)))
                if found and table in HOT:
                    self._db.table(table).update(changes, doc_ids=[doc_id])
                elif found:
                    # a change to a record not in flight is late: the index lets a streamed read take it early
                    flight = self._db.table(ACTIVE).get(Query().run == doc_id) if table == "runs" else None
                    self.journals[table].stage({"op": UPDATE, "id": doc_id, "seq": self._next_seq(), "r": changes},
                                               late=flight is None, lever=_lever(flight or {}))
                    self._track(table, doc_id, changes)
                    self._note(table, None, doc_id, changes)
            if not found:  # raised outside the batch, so a refusal does not spoil an enclosing one
                raise RecordNotFound(f"no record {doc_id} in table {table!r} of {self.path}")
            return {"id": doc_id, **changes}

    def upsert(self, table: str, key_field: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """Insert the record, or replace the one whose `key_field` has the same value (keeping its id).

        A replaced record gets a new seq and at: it is the latest word on that key.
        """
        with self._mutex:
            self._check_writable(table)
            rec = clean(table, record)
            if key_field not in rec:
                raise ValueError(f"upsert into {table!r} of {self.path}: record has no key field {key_field!r}")
            refuse_written(table, rec)
            with self.batch():
                matches = self.find(table, **{key_field: rec[key_field]})
                if len(matches) > 1:
                    raise StoreError(f"{self.path}: {len(matches)} records in {table!r} have "
                                     f"{key_field}={rec[key_field]!r}; upsert needs at most one")
                seq, at = self._next_seq(), utc_now()
                if table in HOT:
                    if matches:
                        doc_id = matches[0]["id"]
                        self._db.table(table).update(replace_with({**rec, "seq": seq, "at": at}), doc_ids=[doc_id])
                    else:
                        doc_id = self._db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = matches[0]["id"] if matches else self._next_id(table)
                    self.journals[table].stage({"op": REPLACE if matches else INSERT, "id": doc_id, "seq": seq,
                                                "at": at, "r": rec}, late=bool(matches),
                                               lever=None if matches else _lever(rec))
                    self._note(table, {"id": doc_id, **rec, "seq": seq, "at": at}, new=not matches)
            return json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))

    def keep(self, name: str, data: Mapping[str, Any]) -> None:
        """Keep one document of another room's bookkeeping (state/sync's) in the hot file, in this transaction: it is
        committed with the records written beside it, or not at all."""
        with self._mutex:
            self._check_writable()
            if not self._depth:
                raise StoreError("keep belongs inside a batch")
            if name in (META, SNAPSHOT, ACTIVE, digest.RECENT, *HOT):
                raise ValueError(f"{name!r} is the store's own table")
            docs = self._db.table(name)
            docs.truncate()
            docs.insert(json.loads(dump(dict(data))))

    def put_snapshot(self, data: Mapping[str, Any]) -> None:
        """Keep `data` (the sequencer's machine state) in this transaction's commit, tagged with the `ends`
        and `seq` the commit reaches: what came after it can then be replayed with `since`."""
        with self._mutex:
            self._check_writable()
            if not self._depth:
                raise StoreError("put_snapshot belongs inside a batch")
            self._snapshot = json.loads(dump(dict(data)))

    def _note(self, table: str, record: dict[str, Any] | None, rid: int = 0, fields: dict[str, Any] | None = None,
              new: bool = True) -> None:
        """Keep the digest of the newest records (state/store/digest.py) with the line just staged."""
        if table not in digest.TABLES:
            return
        docs = self._db.table(digest.RECENT)
        doc = docs.get(Query().table == table)
        if not digest.sound(doc) or not indexed(self._meta(), table):  # the table's first write, or a store from before the digest: read it once
            keys = digest.started([r for _, r in sorted(self._records(table).items())])
            docs.remove(Query().table == table)
            docs.insert({"table": table, "keys": keys})
            return
        keys = {k: {"n": g["n"], "last": list(g["last"])} for k, g in doc["keys"].items()}
        if record is None:
            digest.updated(keys, rid, fields or {})
        else:
            digest.noted(keys, json.loads(dump(record)), new)
        docs.update({"keys": keys}, doc_ids=[doc.doc_id])

    # ---- the transaction -----------------------------------------------------------------

    def _begin(self) -> None:
        self._lock.acquire(self.wait_s, self.on_wait)
        try:
            # only the lock holder may clear a dead writer's leftovers: nobody else is writing
            self.storage.remove_temp_files()
            self.storage.discard()
            self._db = self._fresh_db()
            data = self.storage.read() or {}
            self.storage.buffering, self._broken, self._snapshot = True, False, None
            meta = check_schema(self.path, data)
            if meta is None:
                orphaned_history(self.path, self.journals)  # a lost hot file is not a new store
                self._db.table(META).insert({"schema_version": SCHEMA_VERSION, "seq": 0, "ids": {}, "ends": {}})
            elif meta.get("schema_version") == 1:
                migrate(self._db, self.journals, self.directory, data)
            else:  # what this commit stamps must have been sound before it: checked again under the lock
                check_journals(self.directory, self.journals, meta)
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
        ends, sums = dict(meta.get("ends") or {}), dict(meta.get(SUMS) or {})
        written = [table for table, journal in self.journals.items() if journal.pending]
        chains = {table: dict(heads) for table, heads in (meta.get(HEADS) or {}).items() if indexed(meta, table)}
        for table, journal in self.journals.items():
            end = int(ends.get(table, 0))
            if table not in sums:  # a store from before checksums: its committed bytes are taken as they are
                sums[table] = crc_of(journal.path, end)
            if table not in chains and not end:  # the levers' chains are kept from a journal's first line on
                chains[table] = {}
            ends[table], sums[table] = journal.commit(end, sums[table], chains.get(table))
        late = _late_index(meta, self.journals)
        marks = {table: ends[table] for table in self.journals}
        settle([self.journals[table].path for table in written])
        stamps = {table: s for table, j in self.journals.items() if (s := stamp(j.path)) is not None}
        self._db.table(META).update({"ends": ends, SUMS: sums, STAMPS: stamps, LATE: late, HEADS: chains, INDEXED: marks,
                                     "last_at": utc_now()},
                                    doc_ids=[META_ID])
        if self._snapshot is not None:
            snapshots = self._db.table(SNAPSHOT)
            snapshots.truncate()
            snapshots.insert({"ends": ends, "seq": meta.get("seq", 0), "data": self._snapshot})
        try:
            self.storage.commit()
        except BaseException:
            # the journals hold lines no hot file counts: this process must not show them (the next writer cuts
            # them off, and hands their ids out again)
            for table in written:
                self.journals[table].forget()
            raise

    def _rollback(self) -> None:
        for journal in self.journals.values():
            journal.discard()
        self.storage.discard()
        self._db = self._fresh_db()
        self._broken = False
        self._snapshot = None

    def _next_seq(self) -> int:
        seq = int(self._meta().get("seq", 0)) + 1
        self._db.table(META).update({"seq": seq}, doc_ids=[META_ID])
        return seq

    def _next_id(self, table: str) -> int:
        ids = dict(self._meta().get("ids") or {})
        ids[table] = int(ids.get(table, 0)) + 1
        self._db.table(META).update({"ids": ids}, doc_ids=[META_ID])
        return ids[table]


def _late_index(meta: dict[str, Any], journals: dict) -> dict[str, dict[str, list[int]]]:
    """meta.late after this commit (state/store/settled.py): each table's late lines, kept from its first line on;
    a journal that held history before the index was kept stays out of it (it is read whole, as before)."""
    before, ends = meta.get(LATE) or {}, meta.get("ends") or {}
    late = {}
    for table, journal in journals.items():
        if (table not in before or not indexed(meta, table)) and int(ends.get(table, 0)):
            continue
        entries = dict(before.get(table) or {})
        for rid, offset in journal.late_written:
            entries[str(rid)] = [*entries.get(str(rid), ()), offset]
        late[table] = entries
    return late


def _lever(record: Mapping[str, Any]) -> str | None:
    """The lever whose chain a record's line joins (state/store/settled.py)."""
    lever = record.get("lever")
    return lever if isinstance(lever, str) and lever else None
