"""`optseq doctor`: check a store file by file, and rebuild its hot file from the journals where that is sound.

The check never writes. The rebuild writes only the hot file, under the store's lock, after keeping a copy of the
one it replaces; it refuses while any journal is damaged inside (that history cannot be guessed back: restore the
journal from a backup). A journal's unfinished last line (a writer killed mid-append) is left out of the rebuilt
ends, and the next writer cuts it off with a copy, as always.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path
from typing import Any

from tinydb import TinyDB

from optseq.state.store.inflight import FINAL
from optseq.state.store.integrity import SUMS, crc_of, scan
from optseq.state.store.journal import fold
from optseq.state.store.layout import ACTIVE, DB_NAME, HISTORY, JOURNAL_DIR, META
from optseq.state.store.locks import TransactionLock, wait_s
from optseq.state.store.schema import SCHEMA_VERSION, check_schema
from optseq.state.store.storage import AtomicJSONStorage, StoreError


def check(directory: Path) -> tuple[list[str], bool]:
    """One line per file of the store (what it holds, or where it is damaged), and whether all are sound."""
    hot, lines, sound = directory / DB_NAME, [], True
    meta = None
    try:
        meta = check_schema(hot, AtomicJSONStorage(hot, readonly=True).read() or {})
        lines.append(f"{hot}: " + (f"ok (schema {meta['schema_version']}, seq {meta['seq']})" if meta else
                                   "missing or empty" if not _journal_bytes(directory) else
                                   "missing or empty beside journals that hold history: `optseq doctor --rebuild` "
                                   "rebuilds it from them"))
        sound = meta is not None or not _journal_bytes(directory)
    except StoreError as exc:
        lines.append(str(exc))
        sound = False
    ends, sums = (meta or {}).get("ends") or {}, (meta or {}).get(SUMS) or {}
    for table in HISTORY:
        path = directory / JOURNAL_DIR / f"{table}.jsonl"
        if not path.exists():
            continue
        records, at, problem = scan(path)
        size, end = path.stat().st_size, int(ends.get(table, 0)) if meta else None
        if problem and (end is None or at < end):
            lines.append(f"{path}: damaged at byte {at} ({problem}); {len(records)} records before it are sound")
            sound = False
        elif end is not None and table in sums and crc_of(path, end) != sums[table]:
            lines.append(f"{path}: its committed {end} bytes do not match their checksum (changed after they were "
                         "written)")
            sound = False
        else:
            tail = f", {size - end} bytes past its committed end (the next writer cuts them off, keeping a copy)" \
                if end is not None and size > end else ""
            lines.append(f"{path}: ok ({len(records)} record{'s' * (len(records) != 1)}, {size} bytes{tail})")
    return lines, sound


def rebuild(directory: Path) -> list[str]:
    """Rebuild the hot file from the journals (copying the old one aside); StoreError when that is not sound."""
    hot = directory / DB_NAME
    lock = TransactionLock(directory)
    lock.acquire(wait_s())
    try:
        if _hot_sound(hot):
            # a sound hot file is the word on what was committed: a journal that disagrees is not rebuilt over
            raise StoreError(f"{hot} is sound: nothing to rebuild (`optseq doctor` checks the journals against it)")
        found, out = {}, []
        for table in HISTORY:
            path = directory / JOURNAL_DIR / f"{table}.jsonl"
            records, at, problem = scan(path)
            if problem and at < path.stat().st_size and not problem.endswith("(an unfinished append)"):
                raise StoreError(f"{path} is damaged at byte {at} ({problem}): the hot file cannot be rebuilt "
                                 "over it; restore the journal from a backup")
            found[table] = (records, at, crc_of(path, at) if path.exists() else 0)
        if not any(records for records, _, _ in found.values()):
            raise StoreError(f"{directory}: no journal holds a record; nothing to rebuild from")
        if hot.exists():
            keep = hot.with_name(f"{DB_NAME}.replaced-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}")
            shutil.copy2(hot, keep)
            out.append(f"kept the old {hot.name} as {keep}")
        storage = AtomicJSONStorage(hot)
        storage.write({})
        db = TinyDB(storage=lambda: storage)
        seqs = [line.get("seq") or 0 for records, _, _ in found.values() for line in records]
        db.table(META).insert({
            "schema_version": SCHEMA_VERSION, "seq": max(seqs, default=0),
            "ids": {t: max((line["id"] for line in records), default=0) for t, (records, _, _) in found.items()},
            "ends": {t: at for t, (_, at, _) in found.items()}, SUMS: {t: c for t, (_, _, c) in found.items()},
            "rebuilt_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        for run in _runs_in_flight(found["runs"][0]):
            db.table(ACTIVE).insert(run)
        out.append(f"rebuilt {hot} from the journals: " + ", ".join(
            f"{len(records)} {t} lines" for t, (records, _, _) in found.items() if records))
        return out
    finally:
        lock.release()


def _runs_in_flight(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs whose last word is not a final status: the next writer's recovery looks at them (their pid is gone)."""
    runs: dict[int, dict[str, Any]] = {}
    for line in lines:
        fold(runs, line)
    return [{"run": rid, "lever": r.get("lever"), **{k: r[k] for k in ("pid", "pgid", "submission_id") if k in r}}
            for rid, r in sorted(runs.items()) if r.get("status") and r.get("status") not in FINAL]


def _hot_sound(hot: Path) -> bool:
    try:
        return check_schema(hot, AtomicJSONStorage(hot, readonly=True).read() or {}) is not None
    except StoreError:
        return False


def _journal_bytes(directory: Path) -> int:
    return sum(os.path.getsize(p) for p in (directory / JOURNAL_DIR).glob("*.jsonl")) \
        if (directory / JOURNAL_DIR).is_dir() else 0
