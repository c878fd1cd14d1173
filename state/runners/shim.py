"""A launch's own subreaper, as `tini -s` or `dumb-init` are: one small process per launch that starts the lever's
command, forwards signals to it, reaps every process its tree leaves, kills what remains when the lever ends or
when optseq goes, and says how it went.

Why one per launch: a child subreaper (PR_SET_CHILD_SUBREAPER) gets the orphans of its own descendants only, so
every process that comes back to a launch's shim is that launch's, whatever it did to hide (setsid, a double fork,
an environment wiped): what a launch left is its shim's descendants, exactly, with no guess from start times
among the launches of a parallel run, and nothing optseq started itself (git's detached gc, a local cluster's
`ray start`) is ever taken for a lever's.

local.py starts it as `python -I -S shim.py` (it imports only the standard library: no site, no start-up beyond
Python's own; docs/performance.md has its cost beside a bare launch) with
  fd 0  the control pipe from optseq: a first line of JSON ({"argv": [...], "grace_s": 5.0, "reports": FD}), then one byte per
        request, T (SIGTERM to the lever's process group) or K (SIGKILL to it). Its end of file means optseq is
        gone, or gave the launch up: the group is SIGKILLed at once and the rest stopped.
  fd 1  where the lever's output goes (the lever gets it as its stdout and stderr; the shim lets go of it);
  and the report pipe, on the fd the header names ("reports"): one JSON object a line, in this order: {"start": PID} or {"error": TEXT}; {"exit": CODE} once
        the lever's lead process has exited (CODE as subprocess gives it, negative for a signal); {"group": N}
        when the lever, ending by itself, left N processes in its group; {"group_stuck": true} when its group
        outlived SIGKILL by REAP_S; {"left": [[PID, COMMAND], ...], "stuck": [PID, ...]} for what it left
        outside its group, stopped and reaped.
Its own exit status is the lever's: the same code, or death by the same signal.

PR_SET_PDEATHSIG asks the kernel for SIGTERM to the shim when optseq's launching thread ends (SIGKILLed optseq
included), and the control pipe's end of file says the same; a signal that comes while the parent lives is passed
to the lever's group. The lever gets PDEATHSIG=SIGKILL from the shim in turn, so even a SIGKILLed shim takes its
lead with it.
"""
from __future__ import annotations

import ctypes
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

CONTROL_FD = 0
TERM, KILL = b"T", b"K"
"""The control pipe's requests: SIGTERM, SIGKILL to the lever's process group."""
REAP_S = 2.0
"""How long a SIGKILLed process may take to die before it is reported stuck (a hang guard)."""
ROUNDS = 8
"""Sweeps of what the lever left: each stopped process's children come back to the shim, for the next."""
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
"""Passed on to the lever's group while optseq lives (a signal optseq had ignored stays ignored)."""
_TICK_S = 0.05
"""Exit polling interval where pidfd is missing (old kernels)."""
NO_PIDFD_ENV = "OPTSEQ_TEST_NO_PIDFD"
"""Set (to anything) in a test: poll as an OS without pidfd does."""


def prctl() -> Callable[..., int] | None:
    """libc's prctl on Linux; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


def die_with_parent(sig: int = signal.SIGKILL, call: Callable[..., int] | None = None) -> Callable[[], None] | None:
    """A preexec_fn asking the kernel for `sig` to the child when the forking thread dies (Linux)."""
    fn = call or prctl()
    if fn is None:
        return None
    parent = os.getpid()
    number = int(sig)

    def setup() -> None:
        # Runs in the child between fork and exec: two calls, nothing that allocates or locks.
        fn(_PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)  # the parent died before the request took hold

    return setup


def pidfd(pid: int) -> int | None:
    """An fd that turns readable when the process exits; None where the OS has no pidfd."""
    if os.environ.get(NO_PIDFD_ENV):
        return None
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class Proc:
    """A process as /proc/PID/stat shows it."""

    __slots__ = ("pid", "ppid", "pgrp", "zombie")

    def __init__(self, pid: int, ppid: int, pgrp: int, zombie: bool) -> None:
        self.pid, self.ppid, self.pgrp, self.zombie = pid, ppid, pgrp, zombie


def processes() -> dict[int, Proc]:
    """Every process /proc shows, by pid; {} without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    found: dict[int, Proc] = {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            # the command name may hold spaces and parentheses: the fields start after its last ')'
            fields = stat[stat.rfind(b")") + 2:].split()
            found[int(entry)] = Proc(int(entry), int(fields[1]), int(fields[2]), fields[0] in (b"Z", b"X"))
        except (OSError, IndexError, ValueError):
            continue
    return found


def descendants(root: int, procs: dict[int, Proc]) -> list[int]:
    """The live processes below `root` in the process tree (zombies left out)."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if not procs[pid].zombie:
            found.append(pid)
        todo += children.get(pid, ())
    return sorted(found)


class Shim:
    """One launch: its lever's lead process, the requests and signals it gets, what it leaves."""

    def __init__(self, argv: list[str], grace_s: float, parent: int, reports: int) -> None:
        self.argv = argv
        self.reports = reports
        self.grace_s = grace_s
        self.parent = parent
        self.me = os.getpid()
        self.lead: subprocess.Popen[bytes] | None = None
        self.asked = False
        """Whether the lever was asked to stop (a request, a forwarded signal): then what its group holds is no
        leftover of its own making."""
        self.abandoned = False
        """optseq is gone, or gave the launch up: the group is killed without waiting for the lead."""

    def say(self, report: dict[str, object]) -> None:
        try:
            os.write(self.reports, json.dumps(report).encode() + b"\n")
        except OSError:
            pass  # optseq is gone: the launch is still ended and reaped, only unheard

    def start(self) -> bool:
        try:
            self.lead = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, start_new_session=True,
                                         preexec_fn=die_with_parent(), close_fds=True)
        except (OSError, subprocess.SubprocessError) as exc:
            self.say({"error": str(exc)})
            return False
        self.say({"start": self.lead.pid})
        null = os.open(os.devnull, os.O_RDWR)  # the output pipe ends when the lever's tree lets go of it
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        return True

    def watch(self, pending: bytes, wakeup: int) -> None:
        """Until the lead exits (left unreaped, so its pgid cannot be reused) or optseq is gone."""
        assert self.lead is not None
        lead = self.lead.pid
        fd = pidfd(lead)
        with selectors.DefaultSelector() as sel:
            sel.register(CONTROL_FD, selectors.EVENT_READ, "control")
            sel.register(wakeup, selectors.EVENT_READ, "signal")
            if fd is not None:
                sel.register(fd, selectors.EVENT_READ, "exit")
            if pending:
                self.control(pending)
            while not self.abandoned and not _exited(lead):
                for key, _ in sel.select(None if fd is not None else _TICK_S):
                    if key.data == "control":
                        self.control(_read(CONTROL_FD))
                    elif key.data == "signal":
                        self.signals(_read(wakeup) or b"")
                        self.reap_orphans()
        if fd is not None:
            os.close(fd)

    def control(self, data: bytes | None) -> None:
        if data == b"":
            self.abandoned = True
        for request in data or b"":
            if bytes([request]) in (TERM, KILL):
                self.asked = True
                self.signal_group(signal.SIGTERM if bytes([request]) == TERM else signal.SIGKILL)

    def signals(self, numbers: bytes) -> None:
        for number in numbers:
            if number == signal.SIGCHLD:
                continue
            if os.getppid() != self.parent:
                self.abandoned = True  # PR_SET_PDEATHSIG: the parent is gone
            else:
                self.asked = True
                self.signal_group(number)

    def signal_group(self, sig: int) -> None:
        assert self.lead is not None
        try:
            os.killpg(self.lead.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap_orphans(self) -> None:
        """Collect the orphans that died under the shim while the lever runs (never its lead: its pgid is kept)."""
        assert self.lead is not None
        try:
            with open(f"/proc/self/task/{self.me}/children", "rb") as f:
                children = [int(pid) for pid in f.read().split()]
        except (OSError, ValueError):
            children = [p.pid for p in processes().values() if p.ppid == self.me]
        _reap(pid for pid in children if pid != self.lead.pid)

    def end(self) -> int | None:
        """Kill the lever's group, reap it, stop what it left outside; the lead's exit code (None if abandoned)."""
        assert self.lead is not None
        lead = self.lead.pid
        code = None
        if not self.abandoned:
            code = _code(os.waitid(os.P_PID, lead, os.WEXITED | os.WNOHANG | os.WNOWAIT))
            self.say({"exit": code})
            procs = processes()
            stayed = [pid for pid in descendants(self.me, procs) if procs[pid].pgrp == lead and pid != lead]
            if stayed and not self.asked:
                self.say({"group": len(stayed)})
        self.signal_group(signal.SIGKILL)  # the lead is not reaped yet: this pgid is still the lever's
        self.lead.wait()
        if not _gone_within(lambda: [p for p in descendants(self.me, processes()) if _in_group(p, lead)], REAP_S):
            self.say({"group_stuck": True})
        left, stuck = self.sweep()
        self.say({"left": [[pid, cmd] for pid, cmd in left], "stuck": stuck})
        return code if code is not None else self.lead.returncode

    def sweep(self) -> tuple[list[tuple[int, str]], list[int]]:
        """Stop every process still below the shim (SIGTERM, SIGKILL after the grace) and reap it: ([(pid, command
        line)] of those stopped, [pids] still alive REAP_S after SIGKILL)."""
        stopped: dict[int, str] = {}
        stuck: list[int] = []
        for _ in range(ROUNDS):
            _reap_any()
            left = descendants(self.me, processes())
            if not left:
                break
            for pid in left:
                stopped.setdefault(pid, _cmdline(pid))
            stuck = _stop(left, self.grace_s)
        _reap_any()
        return sorted(stopped.items()), stuck


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except ProcessLookupError:
        return False


def _gone_within(alive: Callable[[], list[int]], within_s: float) -> bool:
    """Reap what dies until `alive()` is empty (True) or within_s passed (False)."""
    end = time.monotonic() + within_s
    while True:
        _reap_any()
        if not alive():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)


def _stop(pids: list[int], grace_s: float) -> list[int]:
    """SIGTERM, SIGKILL to those left after grace_s, and wait for them to die (REAP_S at most); the ones still
    alive then."""
    _signal(pids, signal.SIGTERM)
    alive = _wait(pids, grace_s)
    if alive:
        _signal(alive, signal.SIGKILL)
        alive = _wait(alive, REAP_S)
    _reap_any()
    return alive


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(pids: list[int], within_s: float) -> list[int]:
    """Wait until each has exited (a zombie has) or within_s passed; the ones still alive. Woken by pidfds where
    the OS has them, so a process that dies at once costs no wait."""
    end = time.monotonic() + within_s
    fds = {pid: pidfd(pid) for pid in pids}
    try:
        with selectors.DefaultSelector() as sel:
            for pid, fd in fds.items():
                if fd is not None:
                    sel.register(fd, selectors.EVENT_READ, pid)
            while True:
                procs = processes()
                alive = [pid for pid in pids if pid in procs and not procs[pid].zombie]
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


def _reap(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _reap_any() -> None:
    """Once the lead is reaped, every child of the shim is the lever's orphan: wait for any that died."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _exited(pid: int) -> bool:
    # WNOWAIT: look without reaping, so the pgid stays reserved until the group is killed.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _code(status: os.waitid_result | None) -> int | None:
    """An exit as subprocess says it: the code, or minus the signal that killed it."""
    if status is None:
        return None
    return status.si_status if status.si_code == os.CLD_EXITED else -status.si_status


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return None


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _header() -> tuple[dict[str, object], bytes]:
    """The control pipe's first line, and what came after it in the same read (an early request)."""
    data = b""
    while b"\n" not in data:
        chunk = os.read(CONTROL_FD, 4096)
        if not chunk:
            raise SystemExit(0)  # optseq gave the launch up before saying what to start
        data += chunk
    line, _, rest = data.partition(b"\n")
    return json.loads(line), rest


def _exit_as(code: int | None) -> None:
    """End with the lever's status: its code, or death by its signal (no core of the shim's own)."""
    if code is None:
        os._exit(1)
    if code >= 0:
        os._exit(code)
    sig = -code
    if sig != signal.SIGKILL:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal whose default is not to end a process


def main() -> None:
    parent = os.getppid()
    fn = prctl()
    if fn is not None:
        fn(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (*FORWARDED, signal.SIGCHLD):
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, lambda number, frame: None)  # the wakeup fd carries it to the loop
    header, pending = _header()
    argv, grace_s, reports = header.get("argv"), header.get("grace_s"), header.get("reports")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(grace_s, (int, float))
            and isinstance(reports, int)):
        raise SystemExit(f"optseq shim: a bad header {header!r}")
    os.set_inheritable(reports, False)
    shim = Shim(argv, float(grace_s), parent, reports)
    if not shim.start():
        os._exit(127)
    shim.watch(pending, wake_r)
    _exit_as(shim.end())


if __name__ == "__main__":
    main()
