"""A launch's own subreaper, as `tini -s` or `dumb-init` are: one small process per launch that starts the lever's
command, forwards signals to it, reaps whatever its tree leaves, kills what remains when the lever ends or when
optseq goes, and reports how it went (shim_link.py is optseq's end: it says the pipes and the reports).

Why one per launch: a child subreaper (PR_SET_CHILD_SUBREAPER) gets the orphans of its own descendants only, so
what comes back to a launch's shim is that launch's, whatever it did to hide (setsid, a double fork, an environment
wiped): no guess among the launches of a parallel run, and nothing optseq started itself (git's detached gc, a
local cluster's `ray start`) taken for a lever's. Its own exit status is the lever's (the same code, or death by
the same signal). It runs once per launch, so it imports little beyond what Python's start-up loads (os, select,
signal, ctypes: no subprocess, no json); docs/performance.md (section "launch") has its cost beside a bare launch.

PR_SET_PDEATHSIG asks the kernel for SIGTERM to the shim when optseq's launching thread ends (a SIGKILLed optseq
included), and the control pipe's end of file says the same; a signal that comes while the parent lives is passed
to the lever's group. The lever gets PDEATHSIG=SIGKILL from the shim in turn: a SIGKILLed shim takes its lead along.
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable

PR_SET_PDEATHSIG = 1
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
_RESTORED = (signal.SIGPIPE, signal.SIGXFSZ)
"""Python ignores these; the lever gets them back at their defaults, as subprocess gives them."""
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


def pidfd(pid: int) -> int | None:
    """An fd that turns readable when the process exits; None where the OS has no pidfd."""
    if os.environ.get(NO_PIDFD_ENV):
        return None
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def descendants(root: int) -> dict[int, int]:
    """The live processes below `root` in the process tree (zombies left out), as /proc shows them now: pid ->
    its process group."""
    below: dict[int, list[int]] = {}
    alive: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    for entry in entries:
        fields = _stat(entry) if entry.isdigit() else None
        if fields is not None:
            below.setdefault(int(fields[1]), []).append(int(entry))
            if fields[0] not in (b"Z", b"X"):
                alive[int(entry)] = int(fields[2])
    found, todo = {}, list(below.get(root, ()))
    while todo:
        pid = todo.pop()
        found.update({pid: alive[pid]} if pid in alive else {})
        todo += below.get(pid, ())
    return found


def _stat(pid: int | str) -> list[bytes] | None:
    """/proc/PID/stat's fields from the state on (state, ppid, pgrp, …); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces and ')': split after the last


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


class Shim:
    """One launch: its lever's lead process, the requests and signals it gets, what it leaves."""

    def __init__(self, argv: list[bytes], grace_s: float, parent: int, reports: int) -> None:
        self.argv = argv
        self.grace_s = grace_s
        self.parent = parent
        self.reports = reports
        self.me = os.getpid()
        self.lead = 0
        self.asked = False
        """Whether the lever was asked to stop (a request, a forwarded signal): then what its group holds is no
        leftover of its own making."""
        self.abandoned = False
        """optseq is gone, or gave the launch up: the group is killed without waiting for the lead."""

    def say(self, *words: object) -> None:
        line = b" ".join(w if isinstance(w, bytes) else str(w).encode() for w in words)
        try:
            os.write(self.reports, line.replace(b"\n", b" ") + b"\n")
        except OSError:
            pass  # optseq is gone: the launch is still ended and reaped, only unheard

    def start(self, ignored: tuple[int, ...]) -> bool:
        """Fork and exec the lever as its own session's leader; False (said) when it cannot start."""
        err_r, err_w = os.pipe()  # close-on-exec: empty at its end once the exec went through
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, (*FORWARDED, signal.SIGCHLD))
        pid = os.fork()
        if pid == 0:
            _exec(self.argv, err_w, ignored, blocked, self.me)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(err_w)
        failed = os.read(err_r, 64)  # one write under PIPE_BUF, before the child's end: read whole or not at all
        os.close(err_r)
        if failed:
            os.waitpid(pid, 0)
            number = int(failed)
            self.say("error", OSError(number, os.strerror(number), os.fsdecode(self.argv[0])))
            return False
        self.lead = pid
        self.say("start", pid)
        null = os.open(os.devnull, os.O_RDWR)  # the output pipe ends when the lever's tree lets go of it
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        return True

    def watch(self, pending: bytes, wakeup: int) -> None:
        """Until the lead exits (left unreaped, so its pgid cannot be reused) or optseq is gone."""
        fd = pidfd(self.lead)
        poll = select.poll()
        for watched in (CONTROL_FD, wakeup, fd):
            if watched is not None:
                poll.register(watched, select.POLLIN)
        if pending:
            self.control(pending)
        while not self.abandoned and not _exited(self.lead):
            for ready, _ in poll.poll(None if fd is not None else _TICK_S * 1000):
                if ready == CONTROL_FD:
                    self.control(_read(CONTROL_FD))
                elif ready == wakeup:
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
        try:
            os.killpg(self.lead, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap_orphans(self) -> None:
        """Collect the orphans that died under the shim while the lever runs (never its lead: its pgid is kept)."""
        try:
            with open(f"/proc/self/task/{self.me}/children", "rb") as f:
                children = [int(pid) for pid in f.read().split()]
        except (OSError, ValueError):  # a kernel without CONFIG_PROC_CHILDREN: every orphan is reaped at the end
            return
        for pid in children:
            try:
                if pid != self.lead:
                    os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def end(self) -> int:
        """Kill the lever's group, reap it, stop what it left outside; the lead's exit code."""
        lead = self.lead
        if not self.abandoned:
            status = os.waitid(os.P_PID, lead, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if status is not None:
                self.say("exit", status.si_status if status.si_code == os.CLD_EXITED else -status.si_status)
            stayed = [pid for pid, group in descendants(self.me).items() if group == lead and pid != lead]
            if stayed and not self.asked:
                self.say("group", len(stayed))
        self.signal_group(signal.SIGKILL)  # the lead is not reaped yet: this pgid is still the lever's
        _, raw = os.waitpid(lead, 0)
        if _wait([pid for pid, group in descendants(self.me).items() if group == lead], REAP_S):
            self.say("group_stuck")
        left, stuck = self.sweep()
        for pid, cmd in left:
            self.say("left", pid, cmd)
        for pid in stuck:
            self.say("stuck", pid)
        self.say("swept")
        return os.waitstatus_to_exitcode(raw)

    def sweep(self) -> tuple[list[tuple[int, bytes]], list[int]]:
        """Stop every process still below the shim (SIGTERM, SIGKILL after the grace) and reap it: ([(pid, command
        line)] of those stopped, [pids] still alive REAP_S after SIGKILL)."""
        stopped: dict[int, bytes] = {}
        stuck: list[int] = []
        for _ in range(ROUNDS):
            _reap_any()
            left = sorted(descendants(self.me))
            if not left:
                break
            for pid in left:
                stopped.setdefault(pid, _cmdline(pid))
            stuck = _stop(left, self.grace_s)
        _reap_any()
        return sorted(stopped.items()), stuck


def _exec(argv: list[bytes], err_w: int, ignored: tuple[int, ...], blocked: Iterable[int], shim: int) -> None:
    """In the forked child: a session of its own, death with the shim, stdin from /dev/null, the signals as
    optseq had them (those it ignored stay ignored, Python's own ignores undone), then the lever; its errno on
    err_w where that fails."""
    try:
        os.setsid()
        fn = prctl()
        if fn is not None:
            fn(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != shim:
                os._exit(137)  # the shim died before the request took hold
        signal.set_wakeup_fd(-1)
        for sig in (*FORWARDED, signal.SIGCHLD, *_RESTORED):
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(err_w, str(exc.errno or 0).encode())
    finally:
        os._exit(127)


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
    fds = [fd for fd in map(pidfd, pids) if fd is not None]
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    try:
        while (alive := [pid for pid in pids if _alive(pid)]) and (left := end - time.monotonic()) > 0:
            for fd, _ in poll.poll(1000 * (left if len(fds) == len(pids) else min(left, 0.01))):
                poll.unregister(fd)
        return alive
    finally:
        for fd in fds:
            os.close(fd)


def _reap_any() -> None:
    """Once the lead is reaped, every child of the shim is the lever's orphan: wait for any that died."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _exited(pid: int) -> bool:
    # WNOWAIT: look without reaping, so the pgid stays reserved until the group is killed.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return None


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").strip()
    except OSError:
        return b""


def _header() -> tuple[float, int, list[bytes], bytes]:
    """The control pipe's header (shim_link.py writes it), and the requests that came with it."""
    data = b""
    while True:
        line, newline, rest = data.partition(b"\n")
        if newline and len(rest) >= int(line.split()[2]):
            break
        chunk = os.read(CONTROL_FD, 65536)
        if not chunk:
            raise SystemExit(0)  # optseq gave the launch up before saying what to start
        data += chunk
    grace_s, reports, size = line.split()
    return float(grace_s), int(reports), rest[:int(size)].split(b"\0"), rest[int(size):]


def _exit_as(code: int) -> None:
    """End with the lever's status: its code, or death by its signal (no core of the shim's own)."""
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
    ignored = tuple(sig for sig in (*FORWARDED, signal.SIGCHLD) if signal.getsignal(sig) == signal.SIG_IGN)
    for sig in (*FORWARDED, signal.SIGCHLD):
        if sig not in ignored or sig == signal.SIGCHLD:  # an ignored SIGCHLD would reap the lead before the shim
            signal.signal(sig, lambda number, frame: None)  # the wakeup fd carries it to the loop
    grace_s, reports, argv, pending = _header()
    os.set_inheritable(reports, False)
    shim = Shim(argv, grace_s, parent, reports)
    if not shim.start(ignored):
        os._exit(127)
    shim.watch(pending, wake_r)
    _exit_as(shim.end())


if __name__ == "__main__":
    main()
