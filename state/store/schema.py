"""The hot file's schema: its version, the checks its meta record must pass, and the migration from version 1."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tinydb import TinyDB

from optseq.state.store.inflight import FINAL
from optseq.state.store.integrity import meta_problem
from optseq.state.store.journal import INSERT, Journal
from optseq.state.store.layout import ACTIVE, HISTORY, JOURNAL_DIR, META, META_ID
from optseq.state.store.shape_check import RecordShapeError, hot_problem
from optseq.state.store.storage import StoreCorrupt, StoreError

SCHEMA_VERSION = 2
"""1: every table in the TinyDB file. 2: history in journals (a version-1 store is migrated on first write)."""


class StoreSchemaError(StoreError):
    """The file's schema_version is missing, invalid or newer than this code."""


def check_schema(path: Path, data: dict) -> dict[str, Any] | None:
    meta = (data.get(META) or {}).get(str(META_ID))
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
    problem = meta_problem(meta) if version > 1 else None
    if problem:
        raise StoreCorrupt(f"{path} is corrupt: {problem}; refusing to use the store so nothing is lost; "
                           "`optseq doctor --rebuild` rebuilds it from the journals")
    shape = hot_problem(data, version)
    if shape:
        # the journals are the history: a hot file of the wrong shape is rebuilt from them; a version-1 file has none
        fix = ("`optseq doctor --rebuild` rebuilds it from the journals" if version > 1 else
               "restore it from a backup")
        raise RecordShapeError(f"{path} has a record of the wrong shape ({shape}); refusing to use the store so "
                               f"nothing is lost; {fix}")
    return meta


def migrate(db: TinyDB, journals: dict[str, Journal], directory: Path, data: dict) -> None:
    """Version 1 kept every table in the TinyDB file: move the history into journals, keep the rest."""
    ids: dict[str, int] = {}
    for table in HISTORY:
        rows = sorted(((int(k), v) for k, v in (data.get(table) or {}).items()), key=lambda kv: kv[0])
        for doc_id, doc in rows:
            fields = {k: v for k, v in doc.items() if k not in ("seq", "at")}
            lever = fields.get("lever")
            journals[table].stage({"op": INSERT, "id": doc_id, "seq": doc.get("seq"), "at": doc.get("at"),
                                   "r": fields}, lever=lever if isinstance(lever, str) and lever else None)
            if fields.get("status") not in FINAL and table == "runs" and fields.get("status"):
                db.table(ACTIVE).insert({"run": doc_id, "lever": fields.get("lever"),
                                         "pid": fields.get("pid"), "pgid": fields.get("pgid")})
        ids[table] = max((doc_id for doc_id, _ in rows), default=0)
        db.drop_table(table)
    (directory / JOURNAL_DIR).mkdir(exist_ok=True)
    db.table(META).update({"schema_version": SCHEMA_VERSION, "ids": ids, "ends": {}}, doc_ids=[META_ID])
