"""Short locks: one writer at a time for each transaction, and one run at a time for each lever.

A transaction takes the store's flock for the few milliseconds it writes, so any number of
processes (a console, a shell's `record`, two lever runs) share one store; a writer that meets a
held lock waits a bounded time, says so, and then names who holds it. A lever's run holds that
lever's own flock for as long as it runs. The kernel drops a flock when its holder dies, however it
dies, so a SIGKILLed process never blocks the next one.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optseq.state import atomic, flock
from optseq.state.text import clean_text
from optseq.state.store.storage import StoreError, StoreUnwritable

LOCK_NAME = "lock"
HOLDER_NAME = "holder.json"


class StoreLocked(StoreError):
    """The store's lock stayed held for a writer's whole wait; `holder` is its sidecar (pid, started, argv,
    host) or None."""

    def __init__(self, directory: Path, holder: dict[str, Any] | None, waited_s: float):
        self.directory, self.holder = directory, holder
        super().__init__(f"store {directory} is busy: {describe(holder)} has held its lock for {waited_s:g} s; "
                         "try again, or stop that optseq")


def describe(holder: dict[str, Any] | None) -> str:
    """'optseq pid 1234 (started …)' for messages; says so when the holder cannot be named."""
    if not holder:
        return "another optseq process (pid unknown)"
    where = f" on {holder['host']}" if holder.get("host") not in (None, _host()) else ""
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
        holder = json.loads((directory / HOLDER_NAME).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    # another writer (or an older optseq) may have left `\ud800` escapes: what we show must print and store
    return clean_text(holder) if isinstance(holder, dict) else None


def live_holder(directory: Path) -> dict[str, Any] | None:
    """The sidecar when its process is alive on this host; a dead writer's leftover sidecar names no one."""
    holder = read_holder(directory)
    if holder and holder.get("host") == _host() and not pid_alive(holder.get("pid")):
        return None
    return holder


def _write_holder(directory: Path, info: dict[str, Any]) -> None:
    for leftover in directory.glob(f".{HOLDER_NAME}.*.tmp"):
        leftover.unlink(missing_ok=True)
    # argv keeps undecodable bytes as lone surrogates (surrogateescape), which UTF-8 cannot encode: every writer
    # of the sidecar comes through here, so they become U+FFFD here
    text = json.dumps(clean_text(info, undecoded=True), ensure_ascii=False)
    # 0644: other users read who holds their store; no fsync, for a note that only names the holder in messages
    # is written at every transaction
    atomic.replace(directory / HOLDER_NAME, text.encode("utf-8"), mode=0o644, keep_mode=False, fsync=False,
                   sync_dir="no")


WAIT_S = 10.0
"""How long a writer waits for a held store lock before it gives up and names the holder
(`OPTSEQ_LOCK_WAIT_S` sets another)."""


def wait_s() -> float:
    """The writer's wait: OPTSEQ_LOCK_WAIT_S when it is a number of seconds, else WAIT_S."""
    try:
        value = float(os.environ.get("OPTSEQ_LOCK_WAIT_S", WAIT_S))
    except ValueError:
        return WAIT_S
    return value if 0 <= value < 86400 else WAIT_S
SAY_AFTER_S = 0.5
"""A wait longer than this is announced (once), so a user knows why a command pauses."""
_POLL_S = 0.02
LEVER_LOCKS = "locks"
"""Under the store's runs/ directory: one lock file per lever while it runs."""

_started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _host() -> str:
    """The host name a holder is written with and checked against: the kernel's node name (what
    socket.gethostname() returns on Linux, without importing socket, selectors and their enums)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def me() -> dict[str, Any]:
    """This process, as a holder file names it."""
    return {"pid": os.getpid(), "started": _started, "argv": list(sys.argv), "host": _host()}


class TransactionLock:
    """The store's exclusive flock on `<dir>/lock`, taken per transaction."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self, wait_s: float = WAIT_S, on_wait: Callable[[str], None] | None = None) -> None:
        if self._fd is not None:
            return
        try:
            fd = flock.open_lock(self.path)
        except OSError as e:
            raise StoreUnwritable(f"cannot open lock file {self.path}: {e.strerror or e}") from None
        start = time.monotonic()
        said = False
        while True:
            try:
                if flock.take(fd, wait=False):
                    break
            except OSError as e:
                os.close(fd)
                raise StoreError(f"cannot lock {self.path}: {e.strerror or e}") from None
            waited = time.monotonic() - start
            if on_wait is not None and not said and (waited >= SAY_AFTER_S or waited >= wait_s):
                on_wait(f"waiting for {describe(live_holder(self.directory))} to finish writing "
                        f"{self.directory} (up to {wait_s:g} s)")
                said = True
            if waited >= wait_s:
                os.close(fd)
                raise StoreLocked(self.directory, live_holder(self.directory), wait_s) from None
            time.sleep(_POLL_S)
        self._fd = fd
        try:
            _write_holder(self.directory, me())
        except OSError:
            pass  # the sidecar only names the holder for messages; the flock is what counts

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            (self.directory / HOLDER_NAME).unlink()
        except OSError:
            pass
        fd, self._fd = self._fd, None
        os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None


class LeverLock:
    """A flock held for the whole of one lever's run, naming the run that holds it."""

    def __init__(self, runs_dir: Path, lever_id: str):
        self.path = runs_dir / LEVER_LOCKS / f"{lever_id}.lock"
        self._fd: int | None = None

    def try_acquire(self, info: dict[str, Any]) -> dict[str, Any] | None:
        """Take it without waiting; None on success, else what the holder wrote (its pid, run)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = flock.open_lock(self.path)
        if not flock.take(fd, wait=False):
            try:
                holder = json.loads(os.read(fd, 65536) or b"{}")
            except ValueError:
                holder = {}
            os.close(fd)
            return holder if isinstance(holder, dict) else {}
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({**me(), **info}, ensure_ascii=True).encode())
        except OSError as exc:  # a full disk: the holder's note cannot be written, so the lock is not taken
            os.close(fd)
            raise StoreUnwritable(f"{self.path}: cannot take the lock: {exc.strerror or exc}") from None
        self._fd = fd
        return None

    def held_by_other(self) -> bool:
        """Whether another process holds it now (a probe: takes and drops it when free)."""
        return flock.is_held(self.path)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


__all__ = ["HOLDER_NAME", "LOCK_NAME", "LeverLock", "StoreLocked", "TransactionLock", "WAIT_S", "describe",
           "live_holder", "me", "pid_alive", "read_holder"]
