"""The one-writer lock on a state directory, and the sidecar that names who holds it."""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from state.storage import StoreError, StoreUnwritable

LOCK_NAME = "lock"
HOLDER_NAME = "holder.json"


class StoreLocked(StoreError):
    """Another process holds the writer lock; `holder` is its sidecar (pid, started, argv, host) or None."""

    def __init__(self, directory: Path, holder: dict[str, Any] | None):
        self.directory, self.holder = directory, holder
        super().__init__(f"store {directory} is in use by {describe(holder)}; open read-only or stop it")


def describe(holder: dict[str, Any] | None) -> str:
    """'optseq pid 1234 (started …)' for messages; says so when the holder cannot be named."""
    if not holder:
        return "another optseq process (pid unknown)"
    where = f" on {holder['host']}" if holder.get("host") not in (None, socket.gethostname()) else ""
    return f"optseq pid {holder.get('pid')}{where} (started {holder.get('started', '?')})"


def pid_alive(pid: Any) -> bool:
    """Whether a process with this pid exists on this machine (signal 0 probes without signalling)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(directory: Path) -> dict[str, Any] | None:
    """The sidecar as last written, or None when missing or unreadable (it is advisory only)."""
    try:
        holder = json.loads((directory / HOLDER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def live_holder(directory: Path) -> dict[str, Any] | None:
    """The sidecar when its process is alive on this host; a dead writer's leftover sidecar names no one."""
    holder = read_holder(directory)
    if holder and holder.get("host") == socket.gethostname() and not pid_alive(holder.get("pid")):
        return None
    return holder


class WriterLock:
    """An exclusive flock on `<dir>/lock`, held for the writer's whole life.

    The kernel drops a flock when its holder dies, however it dies, so a SIGKILLed writer never
    blocks the next one. The pid is kept in a separate sidecar written by atomic replace, so a
    reader never sees it half-written.
    """

    def __init__(self, directory: Path, fd: int, info: dict[str, Any]):
        self.directory, self.info = directory, info
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path) -> WriterLock:
        """Take the lock without waiting; StoreLocked names the holder when it is taken."""
        path = directory / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StoreUnwritable(f"cannot open lock file {path}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(directory, _wait_for_holder(directory)) from None
        except OSError as e:
            os.close(fd)
            raise StoreError(f"cannot lock {path}: {e.strerror or e}") from None
        info = {
            "pid": os.getpid(),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": list(sys.argv),
            "host": socket.gethostname(),
        }
        lock = cls(directory, fd, info)
        try:
            _write_holder(directory, info)
        except OSError as e:
            lock.release()
            raise StoreUnwritable(f"cannot write {directory / HOLDER_NAME}: {e.strerror or e}") from None
        return lock

    def release(self) -> None:
        """Remove the sidecar, then drop the lock (in that order, so a next writer's sidecar survives)."""
        if self._fd is None:
            return
        try:
            (self.directory / HOLDER_NAME).unlink()
        except OSError:
            pass
        fd, self._fd = self._fd, None
        os.close(fd)


def _write_holder(directory: Path, info: dict[str, Any]) -> None:
    for leftover in directory.glob(f".{HOLDER_NAME}.*.tmp"):
        leftover.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{HOLDER_NAME}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would hide the holder from other users
            json.dump(info, f, ensure_ascii=False)
        os.replace(tmp, directory / HOLDER_NAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _wait_for_holder(directory: Path, patience: float = 1.0) -> dict[str, Any] | None:
    # A writer that has just taken the lock may not have written its sidecar yet, so a missing
    # or dead holder is re-read briefly before giving up on naming it.
    deadline = time.monotonic() + patience
    while True:
        holder = live_holder(directory)
        if holder or time.monotonic() >= deadline:
            return holder
        time.sleep(0.05)
