"""The one file lock: flock(2) on a lock file, exclusive or shared, waiting or not.

The kernel drops a flock when the last descriptor of its open file closes, however its holder dies (SIGKILL
included), so a lock file left behind never blocks anyone. A lock is its descriptor: the worktrees pass theirs to
the git children that must keep a checkout locked while they run (state/code/worktrees.py), take `.use` files
shared, and a lever's lock file carries its holder's note, read through the descriptor that found it taken
(state/store/locks.py). Those, and nothing more to import before the console's first frame, are why this is flock
by hand in one place rather than the `filelock` package, which optseq no longer declares.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def open_lock(path: Path, mode: int = 0o644) -> int:
    """A descriptor of the lock file `path`, created when missing (not inherited by children unless passed)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)


def take(fd: int, *, shared: bool = False, wait: bool = True) -> bool:
    """Lock `fd`; False where `wait` is off and another holds it. OSError for any other failure."""
    how = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, how)
    except BlockingIOError:
        return False
    return True


def drop(fd: int) -> None:
    """Let the lock go and keep the descriptor (a probe that took it only to see it was free)."""
    fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def held(path: Path, *, shared: bool = False, mode: int = 0o644) -> Iterator[int]:
    """The lock on `path` for the block, waited for; yields its descriptor."""
    fd = open_lock(path, mode)
    try:
        take(fd, shared=shared)
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def taken(path: Path, *, shared: bool = False) -> Iterator[int | None]:
    """The lock on `path` for the block if it is free now (its descriptor), else None: nothing waits."""
    fd = open_lock(path)
    try:
        yield fd if take(fd, shared=shared, wait=False) else None
    finally:
        os.close(fd)


def is_held(path: Path, *, create: bool = False) -> bool:
    """Whether another descriptor holds the lock on `path` now (a probe: takes and drops it when free). A missing
    file is held by nobody, and is left missing unless `create`."""
    try:
        fd = open_lock(path) if create else os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not take(fd, wait=False):
            return True
        drop(fd)
        return False
    finally:
        os.close(fd)


__all__ = ["drop", "held", "is_held", "open_lock", "take", "taken"]
