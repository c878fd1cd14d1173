"""Files written aside and renamed into place: a kept copy of a file's exact bytes, and a whole file replaced.

Both are what `doctor --rebuild` (state/store/doctor.py) is made of, so that a rebuild killed at any point leaves
either the damaged hot file as it was or the rebuilt one, and, from the moment the hot file can change, a durable
copy of its old bytes under a name no later copy takes. `OPTSEQ_TEST_KILL_AT` names a step at which the process
kills itself with SIGKILL (`step`): the kill-loop test's deterministic points, the same on any machine's speed.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

from optseq.state.store.storage import StoreError, StoreUnwritable

KILL_ENV = "OPTSEQ_TEST_KILL_AT"


def step(name: str) -> None:
    """A boundary between two writes: the process dies here, as a SIGKILL would leave it, when the test asks."""
    if os.environ.get(KILL_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def keep_copy(path: Path, raw: bytes, suffix: str) -> tuple[Path, bool]:
    """`raw` (the bytes `path` holds) kept durably beside it as `NAME.SUFFIX`, or `NAME.SUFFIX-2`, … where that is
    taken: an earlier copy is never overwritten. Where a copy with these very bytes is kept already (a rebuild
    killed after keeping it), that one is the copy. Returns (the copy, whether it was written now)."""
    for kept in sorted(path.parent.glob(f"{path.name}.replaced-*")):
        if not kept.name.endswith(".tmp") and _holds(kept, raw):
            return kept, False
    tmp = _write_temp(path.parent, f".{path.name}.keep.", raw, _mode(path), "keep")
    try:
        if tmp.read_bytes() != raw:  # what the disk gives back is what is kept, or nothing is
            raise StoreError(f"cannot keep a copy of {path}: {tmp} does not read back as written")
        step("keep-verified")
        keep = _link_new(tmp, path.with_name(f"{path.name}.{suffix}"))
    finally:
        tmp.unlink(missing_ok=True)
    step("keep-linked")
    _fsync_directory(path.parent)
    return keep, True


def replace(path: Path, data: bytes, what: str) -> None:
    """`path` now holds `data`, whole, or still what it held: written aside, fsynced, renamed over it, and the
    rename made durable; `what` names the steps (`what-written`, `what-renamed`)."""
    tmp = _write_temp(path.parent, f".{path.name}.", data, _mode(path), what)
    try:
        step(f"{what}-written")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise StoreUnwritable(f"cannot write {path}: {e.strerror or e}") from e
    step(f"{what}-renamed")
    _fsync_directory(path.parent)


def _write_temp(directory: Path, prefix: str, data: bytes, mode: int, what: str) -> Path:
    """A new temp file holding `data`, fsynced (the step `what-half` falls between its two halves)."""
    tmp = directory / f"{prefix}{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as f:
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            step(f"{what}-half")
            f.write(data[half:])
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise StoreUnwritable(f"cannot write {tmp}: {e.strerror or e}") from e
    return tmp


def _link_new(tmp: Path, wanted: Path) -> Path:
    """`tmp` given a name of its own next to `wanted` (a hard link never replaces a file that is there)."""
    for n in range(1, 1000):
        name = wanted if n == 1 else wanted.with_name(f"{wanted.name}-{n}")
        try:
            os.link(tmp, name)
            return name
        except FileExistsError:
            continue
        except OSError as e:
            raise StoreUnwritable(f"cannot keep a copy as {name}: {e.strerror or e}") from e
    raise StoreError(f"cannot keep a copy as {wanted}: 999 copies of that name are kept already")


def _holds(path: Path, raw: bytes) -> bool:
    try:
        return path.stat().st_size == len(raw) and path.read_bytes() == raw
    except OSError:
        return False


def _mode(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o644


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as e:
        raise StoreUnwritable(f"cannot open {directory} to make its renames durable: {e.strerror or e}") from e
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
