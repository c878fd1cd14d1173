"""Writing the store: the writes made inside a transaction (state/store/transaction.py), each checked against the
schema before anything is written, with the digest of the newest records and the runs in flight kept beside."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tinydb import Query

from optseq.state.store import digest
from optseq.state.store.hot import Hot, Record
from optseq.state.store.inflight import track
from optseq.state.store.journal import INSERT, REPLACE, UPDATE
from optseq.state.store.layout import ACTIVE, HOT, META, SNAPSHOT
from optseq.state.store.reading import Reader
from optseq.state.store.records import RecordNotFound, clean, replace_with, utc_now
from optseq.state.store.rows import Ids
from optseq.state.store.settled import indexed
from optseq.state.store.shape_check import refuse_written
from optseq.state.store.storage import StoreError, dump
from optseq.state.store.transaction import Transaction


class Writer:
    """The store's writes, over the one open store's `Hot` state, each in a batch of `tx` (its own, or the one
    open); `reader` finds the record an upsert replaces."""

    def __init__(self, hot: Hot, tx: Transaction, reader: Reader) -> None:
        self.hot, self.tx, self.reader = hot, tx, reader

    def append(self, table: str, record: Mapping[str, Any], elsewhere: str | None = None) -> Record:
        """Add a record; returns it as stored, with `id`, `seq` and `at`. `elsewhere`: the writer whose run this is
        (a sync brought it): in flight there, not here, so recovery never ends it (inflight.py)."""
        hot = self.hot
        with hot.mutex:
            hot.check_writable(table)
            rec = clean(table, record)
            refuse_written(table, rec)
            with self.tx.batch():
                seq, at = self.tx.next_seq(), utc_now()
                if table in HOT:
                    doc_id = hot.db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = self.tx.next_id(table)
                    hot.journals[table].stage({"op": INSERT, "id": doc_id, "seq": seq, "at": at, "r": rec},
                                              lever=_lever(rec))
                    if table == "runs":
                        track(hot.db.table(ACTIVE), doc_id, rec, new=True, elsewhere=elsewhere)
                    self._note(table, {"id": doc_id, **rec, "seq": seq, "at": at})
            out: Record = json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))
            return out

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> Record:
        """Set some fields of one record (its seq and at stay); returns the fields set, with `id`."""
        hot = self.hot
        with hot.mutex:
            hot.check_writable(table)
            changes = clean(table, fields)
            refuse_written(table, changes, whole=False)
            with self.tx.batch():
                # a journal record exists exactly when its id was handed out: no need to read the journal
                found = (hot.db.table(table).get(doc_id=doc_id) is not None if table in HOT
                         else 1 <= doc_id <= hot.meta_part(Ids).ids.get(table, 0))
                if found and table in HOT:
                    hot.db.table(table).update(changes, doc_ids=[doc_id])
                elif found:
                    # a change to a record not in flight is late: the index lets a streamed read take it early
                    flight = hot.db.table(ACTIVE).get(Query().run == doc_id) if table == "runs" else None
                    lever = _lever(flight) if isinstance(flight, dict) else None
                    hot.journals[table].stage({"op": UPDATE, "id": doc_id, "seq": self.tx.next_seq(), "r": changes},
                                              late=flight is None, lever=lever)
                    if table == "runs":
                        track(hot.db.table(ACTIVE), doc_id, changes)
                    self._note(table, None, doc_id, changes)
            if not found:  # raised outside the batch, so a refusal does not spoil an enclosing one
                raise RecordNotFound(f"no record {doc_id} in table {table!r} of {hot.path}")
            return {"id": doc_id, **changes}

    def upsert(self, table: str, key_field: str, record: Mapping[str, Any]) -> Record:
        """Insert the record, or replace the one whose `key_field` has the same value (keeping its id).

        A replaced record gets a new seq and at: it is the latest word on that key.
        """
        hot = self.hot
        with hot.mutex:
            hot.check_writable(table)
            rec = clean(table, record)
            if key_field not in rec:
                raise ValueError(f"upsert into {table!r} of {hot.path}: record has no key field {key_field!r}")
            refuse_written(table, rec)
            with self.tx.batch():
                matches = self.reader.find(table, **{key_field: rec[key_field]})
                if len(matches) > 1:
                    raise StoreError(f"{hot.path}: {len(matches)} records in {table!r} have "
                                     f"{key_field}={rec[key_field]!r}; upsert needs at most one")
                seq, at = self.tx.next_seq(), utc_now()
                doc_id: int
                if table in HOT:
                    if matches:
                        doc_id = matches[0]["id"]
                        hot.db.table(table).update(replace_with({**rec, "seq": seq, "at": at}), doc_ids=[doc_id])
                    else:
                        doc_id = hot.db.table(table).insert({**rec, "seq": seq, "at": at})
                else:
                    doc_id = matches[0]["id"] if matches else self.tx.next_id(table)
                    hot.journals[table].stage({"op": REPLACE if matches else INSERT, "id": doc_id, "seq": seq,
                                               "at": at, "r": rec}, late=bool(matches),
                                              lever=None if matches else _lever(rec))
                    self._note(table, {"id": doc_id, **rec, "seq": seq, "at": at}, new=not matches)
            out: Record = json.loads(dump({"id": doc_id, **rec, "seq": seq, "at": at}))
            return out

    def keep(self, name: str, data: Mapping[str, Any]) -> None:
        """Keep one document of another room's bookkeeping (state/sync's) in the hot file, in this transaction: it is
        committed with the records written beside it, or not at all."""
        hot = self.hot
        with hot.mutex:
            hot.check_writable()
            if not self.tx.open:
                raise StoreError("keep belongs inside a batch")
            if name in (META, SNAPSHOT, ACTIVE, digest.RECENT, *HOT):
                raise ValueError(f"{name!r} is the store's own table")
            docs = hot.db.table(name)
            docs.truncate()
            docs.insert(json.loads(dump(dict(data))))

    def put_snapshot(self, data: Mapping[str, Any]) -> None:
        """Keep `data` (the sequencer's machine state) in this transaction's commit, tagged with the `ends`
        and `seq` the commit reaches: what came after it can then be replayed with `since`."""
        with self.hot.mutex:
            self.hot.check_writable()
            if not self.tx.open:
                raise StoreError("put_snapshot belongs inside a batch")
            self.tx.snapshot = json.loads(dump(dict(data)))

    def _note(self, table: str, record: Record | None, rid: int = 0, fields: dict[str, Any] | None = None,
              new: bool = True) -> None:
        """Keep the digest of the newest records (state/store/digest.py) with the line just staged."""
        if table not in digest.TABLES:
            return
        hot = self.hot
        docs = hot.db.table(digest.RECENT)
        doc = docs.get(Query().table == table)
        # the table's first write, or a store from before the digest: read it once
        if not isinstance(doc, dict) or not digest.sound(doc) or not indexed(hot.counters(), table):
            keys = digest.started([r for _, r in sorted(hot.records(table).items())])
            docs.remove(Query().table == table)
            docs.insert({"table": table, "keys": keys})
            return
        keys = {k: {"n": g["n"], "last": list(g["last"])} for k, g in doc["keys"].items()}
        if record is None:
            digest.updated(keys, rid, fields or {})
        else:
            digest.noted(keys, json.loads(dump(record)), new)
        docs.update({"keys": keys}, doc_ids=[doc.doc_id])


def _lever(record: Mapping[str, Any]) -> str | None:
    """The lever whose chain a record's line joins (state/store/settled.py)."""
    lever = record.get("lever")
    return lever if isinstance(lever, str) and lever else None
