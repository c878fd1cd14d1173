"""`optseq doctor`: check a store file by file, and rebuild its hot file from the journals where that is sound.

The check never writes. The rebuild writes only the hot file, under the store's lock, in one atomic step after
keeping a durable copy of the one it replaces; it refuses while any journal is damaged inside (that history cannot
be guessed back: restore the journal from a backup). A journal's unfinished last line (a writer killed mid-append)
is left out of the rebuilt ends, and the next writer cuts it off with a copy, as always.
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from optseq.state.store import aside
from optseq.state.store.inflight import FINAL, FROM_JOURNAL, in_flight_row
from optseq.state.store.integrity import SUMS, crc_of, scan
from optseq.state.store.journal import fold
from optseq.state.store.layout import ACTIVE, DB_NAME, HISTORY, JOURNAL_DIR, META, META_ID
from optseq.state.store.locks import TransactionLock, wait_s
from optseq.state.store.schema import SCHEMA_VERSION, check_schema
from optseq.state.store.storage import AtomicJSONStorage, StoreError, dump


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
    """Rebuild the hot file from the journals (keeping the old one's bytes first); StoreError when that is not
    sound. One atomic step: the old file's exact bytes are kept under a name of their own and made durable before
    anything changes, then the whole new file is written aside and renamed over it (state/store/aside.py). Killed at
    any point, it leaves the old file as it was or the rebuilt one, never a file that says it is sound and is half
    written; the runs it finds in flight are in the new file from the start, for the next open to recover."""
    hot = directory / DB_NAME
    lock = TransactionLock(directory)
    lock.acquire(wait_s())
    try:
        aside.step("locked")
        AtomicJSONStorage(hot).remove_temp_files()  # a killed rebuild's (or writer's) unfinished files, never read
        raw = _raw(hot)
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
        now = dt.datetime.now(dt.timezone.utc)
        if raw is not None:
            keep, new = aside.keep_copy(hot, raw, f"replaced-{now:%Y%m%dT%H%M%SZ}")
            out.append(f"kept the old {hot.name} as {keep}" + ("" if new else " (kept there by an earlier rebuild)"))
        seqs = [line.get("seq") or 0 for records, _, _ in found.values() for line in records]
        meta = {"schema_version": SCHEMA_VERSION, "seq": max(seqs, default=0),
                "ids": {t: max((line["id"] for line in records), default=0) for t, (records, _, _) in found.items()},
                "ends": {t: at for t, (_, at, _) in found.items()}, SUMS: {t: c for t, (_, _, c) in found.items()},
                "rebuilt_at": now.isoformat(timespec="seconds")}
        active = _runs_in_flight(found["runs"][0])
        data = {META: {str(META_ID): meta}, ACTIVE: {str(i): run for i, run in enumerate(active, 1)}}
        if _raw(hot) != raw:  # nobody writes without the lock; a hand that did is not written over unkept
            raise StoreError(f"{hot} changed while it was rebuilt; run `optseq doctor --rebuild` again")
        aside.replace(hot, dump(data).encode("utf-8"), "hot")
        aside.step("done")
        lines = ", ".join(f"{len(records)} {t} line{'s' * (len(records) != 1)}" for t, (records, _, _) in found.items()
                          if records)
        flight = (f"; {len(active)} runs were in flight: the next optseq that opens the store recovers those no "
                  "process holds") if active else ""
        out.append(f"rebuilt {hot} from the journals: {lines}{flight}")
        return out
    finally:
        lock.release()


def _runs_in_flight(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs whose last word is not a final status: the next writer's recovery looks at them (their pid is gone)."""
    runs: dict[int, dict[str, Any]] = {}
    for line in lines:
        fold(runs, line)
    return [{**in_flight_row(rid, r), FROM_JOURNAL: True}
            for rid, r in sorted(runs.items()) if r.get("status") and r.get("status") not in FINAL]


def _raw(hot: Path) -> bytes | None:
    """The hot file's bytes as they are, or None where there is none."""
    try:
        return hot.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {hot}: {exc.strerror or exc}") from None


def _hot_sound(hot: Path) -> bool:
    try:
        return check_schema(hot, AtomicJSONStorage(hot, readonly=True).read() or {}) is not None
    except StoreError:
        return False


def _journal_bytes(directory: Path) -> int:
    return sum(os.path.getsize(p) for p in (directory / JOURNAL_DIR).glob("*.jsonl")) \
        if (directory / JOURNAL_DIR).is_dir() else 0
