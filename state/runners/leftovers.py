"""Processes that outlive their launch, whatever they did to hide: found, stopped (SIGTERM, SIGKILL after a
grace), reaped, and named, so the run can say what it stopped.

optseq is its levers' child subreaper (groups.adopt_orphans): a process whose parent dies is re-parented to
optseq instead of init, however it left the launch's process group (setsid, a double fork) and whatever it
did to its environment (the launch's MARK_ENV wiped). So when a launch ends, optseq's own children are
looked at: one in a session other than optseq's that is no live launch's lead came from a lever, or from
something optseq started itself. A lever's session can only be left for a new one, never joined to optseq's,
so a lever's descendant is never in optseq's session; a process optseq started (git, a compiler) is, unless it
went on to daemonize (git's detached gc: it carries OWN_ENV, which launches do not get) or was started in a
session of its own (a local cluster's `ray start`: born while no launch ran, it is none of theirs).

Which launch an orphan is from, where several run at once (a parallel run): the launch's mark where its
environment kept one, the launch's session where it kept that; else its start time. One that could be a
live launch's is left to the last of them to end. Each launch's sweep also stops what the orphans started
(their whole process tree) and what still carries its mark anywhere.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from optseq.state.runners import groups
from optseq.state.text import terminal_safe

OWN_ENV = "OPTSEQ_REAPER"
"""In optseq's own environment (its pid), so its own children's orphans are told from a lever's; never in a
launch's."""
REAP_S = 2.0
"""How long a SIGKILLed leftover may take to die before the run says it is still there (a hang guard)."""
ROUNDS = 8
"""Sweeps per launch end: each stopped orphan's children come back to optseq, to be found by the next."""
SHOWN = 8
"""Leftovers named on a launch's line (its warning, its log); the rest are counted."""
NOTED = 2
"""Leftovers named in the run's note (the runs table); the record names each, up to KEPT."""
KEPT = 200
"""Leftovers kept on a run's record (`leftovers`); each launch's log names its own."""

_lock = threading.Lock()
"""Taken by a launch's start and by every sweep: a lead half-started is never taken for an orphan."""
_live: dict[int, tuple[int, str]] = {}
"""Each live launch's lead pid -> (its start time in clock ticks since boot, its mark)."""
_past: list[tuple[tuple[int, int], tuple[int, int]]] = []
"""Ended launches' lives, (start, end) as births are ordered (Proc), oldest first: an orphan born in
none of them nor in a live launch's is none of theirs (`ray start`, a git of optseq's own before a launch)."""
_claimed: set[int] = set()
"""Leftovers a sweep is stopping: no other sweep takes (and says) them too."""
PAST = 256
"""Lives kept; beyond, the oldest two are joined into one (wider: an orphan is rather stopped than missed)."""


@dataclass
class Proc:
    """A process as /proc shows it. Which of two was born first: (start, pid), the start time being in clock
    ticks (10 ms), within one of which pids are handed out in order."""

    pid: int
    ppid: int
    sid: int
    zombie: bool
    start: int
    """Clock ticks since boot (/proc/PID/stat field 22)."""


def start(spawn: Callable[[], subprocess.Popen], mark: str) -> subprocess.Popen:
    """Start a launch's lead (spawn() runs Popen) as a live launch: optseq a subreaper from here on."""
    groups.adopt_orphans()
    if os.environ.get(OWN_ENV) != str(os.getpid()):  # set once: a change of the environment races other forks
        os.environ[OWN_ENV] = str(os.getpid())
    with _lock:
        proc = spawn()
        here = _procs([proc.pid]).get(proc.pid)
        _live[proc.pid] = (here.start if here else 0, mark)
    return proc


def stop_left(lead: int, mark: str, grace_s: float) -> tuple[list[tuple[int, str]], list[int]]:
    """Once the launch's lead is reaped: stop and reap every process it left; returns ([(pid, command line)]
    of those stopped, [pids] still alive REAP_S after SIGKILL)."""
    with _lock:
        began = _live.pop(lead, (0, mark))[0]
    me = os.getpid()
    stopped: dict[int, str] = {}
    stuck: list[int] = []
    for _ in range(ROUNDS):
        with _lock:
            procs = _procs()
            left = [pid for pid in _ours(procs, me, lead, began, mark) if not procs[pid].zombie and pid not in _claimed]
            _claimed.update(left)  # a sweep of another launch ending now leaves them to this one
            _reap([p.pid for p in procs.values() if p.zombie and p.ppid == me and _orphan(p, me)])
        if not left:
            break
        for pid in left:
            stopped.setdefault(pid, _cmdline(pid))
        try:
            stuck = _stop(left, grace_s)
        finally:
            with _lock:
                _claimed.difference_update(left)
    with _lock:
        _past.append(((began, lead), _now()))
        while len(_past) > PAST:
            _past[:2] = [(min(_past[0][0], _past[1][0]), max(_past[0][1], _past[1][1]))]
    return sorted(stopped.items()), stuck


def said(lead: int, stopped: list[tuple[int, str]]) -> str:
    """`stopped 2 processes left by launch 41 outside its group: pid 57 (python d.py), pid 58 (sleep 9)`."""
    shown = ", ".join(f"pid {pid} ({command_text(cmd)})" for pid, cmd in stopped[:SHOWN])
    more = f", and {len(stopped) - SHOWN} more" if len(stopped) > SHOWN else ""
    n = len(stopped)
    return f"stopped {n} process{'es' * (n != 1)} left by launch {lead} outside its group: {shown}{more}"


def run_line(left: list[dict]) -> str:
    """A run's note on what its launches left (the runs table's last column): `stopped 12 processes its launches
    left running: pid 57 (python d.py) in pass 1, pid 58 (sleep 9) in pass 1, and 10 more`."""
    shown = ", ".join(f"pid {p.get('pid')} ({command_text(str(p.get('cmd') or ''), 40)})"
                      + (f" in pass {p['pass']}" if p.get("pass") is not None else "") for p in left[:NOTED])
    more = f", and {len(left) - NOTED} more" if len(left) > NOTED else ""
    n = len(left)
    return f"stopped {n} process{'es' * (n != 1)} its launches left running: {shown}{more}"


def command_text(cmd: str, width: int = 80) -> str:
    """A leftover's command line as a run's line shows it: its program's name, not path, then its arguments; one
    line, fit for a terminal, `width` characters at most."""
    words = terminal_safe(cmd).split()
    text = " ".join([os.path.basename(words[0]) or words[0], *words[1:]]) if words else "?"
    return text if len(text) <= width else text[:width - 1] + "…"


# ---- internals -------------------------------------------------------------------------------------------

def _orphan(p: Proc, me: int) -> bool:
    # a child of ours in a session not ours that is no live launch: a launch's orphan (or a daemon of our own)
    return p.sid != os.getsid(0) and p.pid not in _live and p.pid != me


def _ours(procs: dict[int, Proc], me: int, lead: int, began: int, mark: str) -> list[int]:
    """This launch's leftovers: its orphans (told apart from live launches' as the module says), the processes
    still carrying its mark, and every descendant of either."""
    tag = f"{groups.MARK_ENV}={mark}".encode()
    own = f"{OWN_ENV}={me}".encode()
    others = {pid: ((began_, pid), f"{groups.MARK_ENV}={mark_}".encode()) for pid, (began_, mark_) in _live.items()}
    roots = set()
    for p in procs.values():
        if p.zombie or p.pid == me:
            continue
        env = groups.environ(str(p.pid))
        if tag in env:
            roots.add(p.pid)
            continue
        if p.ppid != me or not _orphan(p, me) or own in env:
            continue
        if any(other_tag in env or p.sid == pid for pid, (_, other_tag) in others.items()):
            continue  # a live launch's, by its mark or session
        born = (p.start, p.pid)
        if p.sid != lead and any(born >= other_began for other_began, _ in others.values()):
            continue  # born while another launch runs: it may be that one's, so the last to end stops it
        if p.sid != lead and born < (began, lead) and not any(a <= born <= b for a, b in _past):
            continue  # born while no launch ran: optseq's own (a cluster it started), not a lever's
        roots.add(p.pid)
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found and pid not in _live:
            found.add(pid)
            todo += children.get(pid, [])
    return sorted(found)


def _stop(pids: list[int], grace_s: float) -> list[int]:
    """SIGTERM, SIGKILL to those left after grace_s, and wait for them to die (REAP_S at most); the ones still
    alive then."""
    _signal(pids, signal.SIGTERM)
    alive = _wait(pids, grace_s)
    if alive:
        _signal(alive, signal.SIGKILL)
        alive = _wait(alive, REAP_S)
    _reap(pids)
    return alive


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(pids: list[int], within_s: float) -> list[int]:
    """Wait until each has exited (a zombie has) or within_s passed; the ones still alive. Woken by pidfds where
    the OS has them, so a leftover that dies at once costs no wait."""
    end = time.monotonic() + within_s
    fds = {pid: groups.pidfd(pid) for pid in pids}
    try:
        with selectors.DefaultSelector() as sel:
            for pid, fd in fds.items():
                if fd is not None:
                    sel.register(fd, selectors.EVENT_READ, pid)
            while True:
                alive = [pid for pid in pids if _running(pid)]
                left = end - time.monotonic()
                if not alive or left <= 0:
                    return alive
                if sel.get_map() and all(fds.get(pid) is not None for pid in alive):
                    for key, _ in sel.select(left):
                        sel.unregister(key.fileobj)
                else:
                    time.sleep(min(0.01, left))
    finally:
        for fd in fds.values():
            if fd is not None:
                os.close(fd)


def _reap(pids: list[int]) -> None:
    """Collect those of them that are dead children of ours, one by one: never a wait for any child, which
    would take another thread's (a git call's, a launch's lead's) exit status from it."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _running(pid: int) -> bool:
    p = _procs([pid]).get(pid)
    return p is not None and not p.zombie


def _procs(pids: list[int] | None = None) -> dict[int, Proc]:
    """pid -> Proc for every process (or those asked for) /proc shows; {} without /proc."""
    if pids is None:
        try:
            pids = [int(e) for e in os.listdir("/proc") if e.isdigit()]
        except OSError:
            return {}
    found = {}
    for pid in pids:
        fields = groups.stat_fields(pid)
        if fields is None:
            continue
        try:
            found[pid] = Proc(pid=pid, ppid=int(fields[1]), sid=int(fields[3]), zombie=fields[0] in (b"Z", b"X"),
                              start=int(fields[19]))
        except (IndexError, ValueError):
            continue
    return found


def _now() -> tuple[int, int]:
    """Now, as a birth is ordered (Proc): the clock tick since boot, the clock of /proc/PID/stat's start time, and
    the last pid handed out (a process born later in this tick has a higher one)."""
    tick = int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))
    try:
        with open("/proc/sys/kernel/ns_last_pid", "rb") as f:
            return tick, int(f.read())
    except (OSError, ValueError):
        return tick + 1, 0  # every process of this tick inside: rather stopped than missed


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""
