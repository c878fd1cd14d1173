"""One atomic write: a file's new bytes written aside under a name of their own, made durable, renamed over it.

Every file optseq replaces whole goes through `replace` (the store's hot file, its aside copies and holder note, an
export, a performance section, a worktree's note, a ray pack, the console's CSS cache, a compare's summary): a
reader sees the old file or the new one, never part of either, and a failed write leaves the old one as it was and
no temp file behind. What each caller asks differs and is said by the arguments: the temp file's name (a glob that
clears a dead writer's leftovers must match it), whether it and the rename are fsynced, the mode a new file gets.
This module is the floor of state/ (pyproject's layers): any room, and the console, may import it. It imports no
tempfile (nor the random module behind it): the console writes its store's holder note before its first frame.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Literal

Stage = Literal["temp", "write", "rename", "sync"]
DirSync = Literal["must", "try", "no"]


class AtomicWriteError(OSError):
    """An OSError of an atomic write (same errno, strerror and str() as the one met), with the `stage` it met it
    at: "temp" (the temp file could not be made), "write" (nor written, or fsynced), "rename", "sync" (the
    directory could not be made durable). The file written to is as it was, but after "sync": replaced, not
    durable. `where`: the temp file ("temp", "write"), the file ("rename"), the folder ("sync")."""

    stage: Stage
    where: Path

    @classmethod
    def at(cls, stage: Stage, where: Path, exc: OSError) -> AtomicWriteError:
        err = cls(exc.errno, exc.strerror, exc.filename) if exc.errno is not None else cls(str(exc))
        err.stage, err.where = stage, Path(where)
        return err


Data = bytes | Callable[[BinaryIO], None]
"""The new content: bytes, or a function that writes it into the open temp file (a zip packed in place)."""


def write_temp(directory: Path, prefix: str, data: Data, *, mode: int | None = None, suffix: str = ".tmp",
               fsync: bool = True, step: Callable[[str], None] | None = None) -> tuple[Path, os.stat_result]:
    """A new file `PREFIX<12 hex>SUFFIX` in `directory` holding `data` (fsynced unless told not), and its stat.

    `mode`: the exact mode it gets (None: 0o666 less the umask, as open() makes a file). `step` is called with
    "half" between the two halves of bytes written (the kill tests' point inside a write). AtomicWriteError, with
    the temp file removed, when it cannot be made or written."""
    fd, tmp = _new(directory, prefix, suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            if callable(data):
                data(f)
            elif step is not None:
                half = len(data) // 2
                f.write(data[:half])
                f.flush()
                step("half")
                f.write(data[half:])
            else:
                f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
            st = os.fstat(f.fileno())
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise AtomicWriteError.at("write", tmp, exc) from exc
        raise
    return tmp, st


def replace(path: Path, data: Data, *, mode: int | None = None, keep_mode: bool = True, prefix: str | None = None,
            suffix: str = ".tmp", fsync: bool = True, sync_dir: DirSync = "must",
            step: Callable[[str], None] | None = None) -> os.stat_result:
    """`path` now holds `data`, whole, or still what it held; returns the new file's stat (its inode is the one
    renamed into place).

    The temp file is `PREFIX<12 hex>SUFFIX` beside `path` (prefix `.NAME.` unless given). A file replaced keeps
    its mode where `keep_mode`; else (and for a new file) `mode`, or 0o666 less the umask when None. `fsync`
    makes the bytes durable before the rename; `sync_dir` the rename after it: "must" (a failure raises), "try"
    (a file system that cannot fsync a directory is no error), "no". `step` is called with "half" (see
    write_temp), "written" (before the rename) and "renamed" (before the directory's fsync). AtomicWriteError on
    failure, no temp file left."""
    path = Path(path)
    if keep_mode:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise AtomicWriteError.at("temp", path, exc) from exc
    tmp, st = write_temp(path.parent, f".{path.name}." if prefix is None else prefix, data, mode=mode,
                         suffix=suffix, fsync=fsync, step=step)
    try:
        if step is not None:
            step("written")
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise AtomicWriteError.at("rename", path, exc) from exc
        raise
    if step is not None:
        step("renamed")
    if sync_dir != "no":
        try:
            fsync_dir(path.parent)
        except OSError as exc:
            if sync_dir == "must":
                raise AtomicWriteError.at("sync", path.parent, exc) from exc
    return st


def fsync_dir(directory: Path) -> None:
    """Make the renames in `directory` durable (without it a rename may not survive a power loss, even though
    the data does). OSError where the directory cannot be opened or fsynced."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new(directory: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    for _ in range(100):
        path = Path(directory) / f"{prefix}{os.urandom(6).hex()}{suffix}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), path
        except FileExistsError:
            continue
        except OSError as exc:
            raise AtomicWriteError.at("temp", path, exc) from exc
    taken = FileExistsError(17, f"no free name for a temporary {prefix}*{suffix}", os.fspath(directory))
    raise AtomicWriteError.at("temp", Path(directory), taken)


__all__ = ["AtomicWriteError", "Data", "fsync_dir", "replace", "write_temp"]
