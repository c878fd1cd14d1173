"""Process groups on this OS: find a group's live members, signal and reap it; the death signal a child of optseq
asks for (the shim's, shim.py: it keeps a lever's processes from outliving optseq).

A run record keeps its group (`pgid`), so a later optseq can find a dead run's leftovers with `group_alive`
and end them with `kill_group`; `run_id` checks the OPTSEQ_RUN_ID in each member's environment, because a
pgid recorded long ago may name somebody else's group by now.
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optseq.state.runners import shim


def kill_group(pgid: int, run_id: str | None = None, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group (a run's leftovers); False when there is no such group.

    Meant for groups this process did not start (an earlier optseq's run); for a live run, cancel it.
    With run_id, only a group with a live member started with OPTSEQ_RUN_ID=run_id is signalled:
    a pgid recorded long ago may name somebody else's group by now.
    """
    if not _valid(pgid) or (run_id is not None and not members(pgid, run_id)):
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    reap_group(pgid, 0.0)
    return True


def group_alive(pgid: Any, run_id: str | None = None) -> bool:
    """Whether a process group has a live member. Zombies do not count: they are dead, just unreaped.

    With run_id, only members whose environment holds OPTSEQ_RUN_ID=run_id count (Linux /proc).
    """
    if not _valid(pgid):
        return False
    if run_id is not None:
        return bool(members(pgid, run_id))
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; it is somebody else's
    if not Path("/proc/self/stat").exists():
        return True
    return bool(members(pgid))


def _valid(pgid: Any) -> bool:
    # pgid 0 or 1 would signal our own group or init's: never a run's.
    return isinstance(pgid, int) and not isinstance(pgid, bool) and pgid > 1


def members(pgid: int, run_id: str | None = None) -> list[int]:
    """Live (non-zombie) processes in the group, from /proc; [] where /proc is missing."""
    members = []
    tag = f"OPTSEQ_RUN_ID={run_id}".encode() if run_id is not None else None
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is not None and len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            if tag is None or tag in environ(entry):
                members.append(int(entry))
    return members


def stat_fields(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields from the state on (field 3 on: state, ppid, pgrp, session, …); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    return stat[stat.rfind(b")") + 2:].split()


def environ(pid: str) -> list[bytes]:
    """A process's environment as its `NAME=value` entries; [] where it cannot be read (gone, not ours)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def reap_group(pgid: int, within_s: float) -> bool:
    """Reap this group's dead members that are our children; True once no live member is left."""
    end = time.monotonic() + within_s
    while True:
        ours = True
        try:
            while os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG) is not None:
                pass
        except ChildProcessError:
            ours = False
        if not ours and not group_alive(pgid):
            return True
        if time.monotonic() >= end:
            return not group_alive(pgid)
        time.sleep(0.01)


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A preexec_fn asking the kernel for `sig` to the child when the forking thread dies (Linux)."""
    fn = shim.prctl()
    if fn is None:
        return None
    parent = os.getpid()
    number = int(sig)

    def setup() -> None:
        # Runs in the child between fork and exec: two calls, nothing that allocates or locks.
        fn(shim.PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)  # the parent died before the request took hold

    return setup
