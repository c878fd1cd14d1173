"""A TinyDB storage whose every write is atomic: temp file, fsync, os.replace, fsync of the directory."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
from tinydb.storages import Storage

from optseq.state import atomic

Data = dict[str, dict[str, dict[str, Any]]]

_DECODE = msgspec.json.Decoder()


class StoreError(Exception):
    """Any store failure; str() is one line naming the file or directory."""


class StoreCorrupt(StoreError):
    """The database file cannot be parsed; it is left untouched."""


class StoreReadOnly(StoreError):
    """A write was attempted on a store opened read-only."""


class StoreUnwritable(StoreError):
    """The state directory or database file cannot be created or written."""


def dump(data: Any) -> str:
    """The one JSON encoding of the store: compact, UTF-8 text as is (plans are Korean)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class AtomicJSONStorage(Storage):
    """Reads and writes the whole database as one JSON file that is only ever replaced, never rewritten.

    A reader sees either the previous file or the next one. Between writes the parsed data is cached
    and revalidated against the file's (inode, mtime, size), so a read-only user follows the writer.
    While `buffering` is on, writes only update the cache; `commit()` then writes once.
    """

    def __init__(self, path: str | os.PathLike, *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self.buffering = False
        self.writes = 0
        """How many times the file has been replaced by this instance (batches count once)."""
        self._data: Data | None = None
        self._signature: tuple[int, int, int] | None = None
        self._dirty = False

    @property
    def dirty(self) -> bool:
        """Buffered writes not yet committed."""
        return self._dirty

    @property
    def signature(self) -> tuple[int, int, int] | None:
        """(inode, mtime, size) of the file as last read: changes whenever a writer replaces it."""
        return self._signature

    def read(self) -> Data | None:
        # TinyDB mutates what read() returns and hands it straight back to write(); the Store
        # copies everything it gives out, so sharing the cache here is safe and saves a parse.
        if self._dirty:
            return self._data
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._data, self._signature = None, None
            return None
        if self._signature is not None and _signature(st) == self._signature:
            return self._data
        return self._load()

    def write(self, data: Data) -> None:
        if self.readonly:
            raise StoreReadOnly(f"{self.path} is open read-only")
        self._data = data
        if self.buffering:
            self._dirty = True
        else:
            self._replace(data)

    def commit(self) -> None:
        """Write what buffered writes left in memory, as one atomic replace."""
        if self._dirty:
            self._replace(self._data)

    def discard(self) -> None:
        """Forget the cache and any buffered writes; the next read comes from the file."""
        self._data, self._signature, self._dirty = None, None, False

    def remove_temp_files(self) -> int:
        """Delete temp files left by a writer that died mid-write; call only while holding the writer lock."""
        import glob  # a writer's: a read never loads it (with fnmatch and their patterns)

        pattern = os.path.join(glob.escape(str(self.path.parent)), f".{glob.escape(self.path.name)}.*.tmp")
        removed = 0
        for leftover in glob.glob(pattern):
            try:
                os.unlink(leftover)
                removed += 1
            except FileNotFoundError:
                pass
        return removed

    def close(self) -> None:
        self.discard()

    def _load(self) -> Data | None:
        with open(self.path, "rb") as f:
            st = os.fstat(f.fileno())
            raw = f.read()
        data = _parse(self.path, raw)
        self._data, self._signature, self._dirty = data, _signature(st), False
        return data

    def _replace(self, data: Data | None) -> None:
        try:
            # the temp file's name is the one remove_temp_files clears; a new database is 0644, a replaced one
            # keeps whatever mode the user gave it
            st = atomic.replace(self.path, dump(data if data is not None else {}).encode("utf-8"), mode=0o644)
        except BaseException as e:
            self.discard()
            if isinstance(e, OSError):
                raise StoreUnwritable(f"cannot write {self.path}: {e.strerror or e}") from e
            raise
        self._data, self._signature, self._dirty = data, _signature(st), False
        self.writes += 1


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    # os.replace gives the file a new inode, so the inode alone tells a writer's new file apart;
    # mtime and size guard against an inode number being reused.
    return st.st_ino, st.st_mtime_ns, st.st_size


def _parse(path: Path, raw: bytes) -> Data | None:
    if not raw.strip():
        return None
    keep = "refusing to use it so nothing is lost; restore it or move it aside"
    try:
        # msgspec's decoder parses the hot file (its snapshot and digest: 0.4 MB at 1,000 runs) in a third of
        # json.loads's time, to the same objects; what it refuses (NaN, which json.dumps writes, a lone surrogate,
        # text that is no JSON) is json.loads's to take or to name, as it always was
        data = _DECODE.decode(raw)
    except msgspec.DecodeError:
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise StoreCorrupt(f"{path} is corrupt: not UTF-8 text at byte {e.start}; {keep}") from None
        except json.JSONDecodeError as e:
            raise StoreCorrupt(
                f"{path} is corrupt: invalid JSON ({e.msg} at line {e.lineno} column {e.colno}); {keep}"
            ) from None
    problem = _shape_problem(data)
    if problem:
        raise StoreCorrupt(f"{path} is corrupt: {problem}; {keep}")
    return data


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "the top level is not an object of tables"
    for name, table in data.items():
        if not isinstance(table, dict):
            return f"table {name!r} is not an object of records"
        for doc_id, doc in table.items():
            if not doc_id.isdigit() or not isinstance(doc, dict):
                return f"table {name!r} has a malformed record {doc_id!r}"
    return None
