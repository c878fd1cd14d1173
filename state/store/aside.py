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

from optseq.state import atomic
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
    try:
        tmp, _ = atomic.write_temp(path.parent, f".{path.name}.keep.", raw, mode=_mode(path),
                                   step=lambda at: step(f"keep-{at}"))
    except atomic.AtomicWriteError as e:
        raise StoreUnwritable(f"cannot write {e.where}: {e.strerror or e}") from e
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
    """`path` now holds `data`, whole, or still what it held (state/atomic.py), the file's mode kept; `what` names
    the steps (`what-half`, `what-written`, `what-renamed`)."""
    try:
        atomic.replace(path, data, mode=0o644, step=lambda at: step(f"{what}-{at}"))
    except atomic.AtomicWriteError as e:
        if e.stage == "sync":
            raise StoreUnwritable(f"cannot open {path.parent} to make its renames durable: {e.strerror or e}") from e
        raise StoreUnwritable(f"cannot write {e.where}: {e.strerror or e}") from e


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
        atomic.fsync_dir(directory)
    except OSError as e:
        raise StoreUnwritable(f"cannot open {directory} to make its renames durable: {e.strerror or e}") from e
