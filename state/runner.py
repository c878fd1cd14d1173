"""Launching a lever's command: its own process group, the protocol read as it arrives, timeout, cancel, cleanup.

Threads. `Launcher.run` starts the process and waits for it in the calling thread, and calls
every callback (`on_start`, `on_event`, `on_log`) from that same thread; there is no reader
thread. Run it where blocking is fine: the CLI's main thread, or a TUI worker thread that
hands updates to the UI with `call_from_thread`. `cancel()` may be called from any thread.

Orphans. On Linux the child gets PR_SET_PDEATHSIG=SIGKILL, so it dies even when optseq is
SIGKILLed. The kernel fires that signal when the *thread* that forked the child exits, which is
why the thread that calls Popen (inside `run`) is the thread that waits for the run: never start
a run in a short-lived thread and hand the process to another. The death signal is not inherited
by the lever's own children; those stay in the lever's process group, which the run record keeps
(`pgid`) so a later optseq can find them with `group_alive` and end them with `kill_group`.
On Linux the first run also makes optseq a child subreaper, so the lever's orphaned children are
re-parented to optseq and reaped here instead of lingering as zombies under an init that may
never reap them.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from optseq.state.runs.protocol import Transcript

__all__ = ["STATUSES", "Launcher", "RunOutcome", "RunSpec", "group_alive", "kill_group", "run"]

STATUSES = ("succeeded", "failed", "unavailable", "timeout", "cancelled", "interrupted")
"""`interrupted`: the infrastructure lost the run (a remote runner's node died), never the lever's failure."""
DRAIN_S = 1.0
"""How long to keep reading after the group is dead: a process that escaped the group may hold the pipe."""
REAP_S = 2.0
_TICK_S = 0.1
"""Exit polling interval where pidfd is missing (non-Linux, old kernels)."""
_CHUNK = 65536
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class RunSpec:
    """What to launch and under which limits."""

    argv: list[str]
    """The command; a leading "python" means this interpreter (sys.executable)."""
    cwd: str | Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """Merged over os.environ: OPTSEQ_RUN_ID, OPTSEQ_INFRA (JSON), OPTSEQ_ARTIFACTS, OPTSEQ_REPEATS, ..."""
    log_path: str | Path | None = None
    """Every output line, events included, flushed as it arrives; parent folders are created."""
    timeout_s: float | None = None
    """Wall-clock limit from start; None for none."""
    grace_s: float = 5.0
    """Between SIGTERM and SIGKILL when a run is timed out or cancelled."""

    def __post_init__(self) -> None:
        if isinstance(self.argv, (str, bytes)) or not isinstance(self.argv, (list, tuple)) or not self.argv:
            raise ValueError(f"run argv must be a non-empty list of strings, got {self.argv!r}")
        bad = [a for a in self.argv if not isinstance(a, str)]
        if bad:
            raise ValueError(f"run argv items must be strings, got {bad[0]!r} in {self.argv!r}")
        self.argv = list(self.argv)
        bad_env = [k for k, v in dict(self.env).items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad_env:
            raise ValueError(f"run env values must be strings, got {bad_env[0]!r}={dict(self.env)[bad_env[0]]!r}")
        if self.timeout_s is not None and not (_seconds(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"run timeout_s must be a positive number of seconds or None, got {self.timeout_s!r}")
        if not (_seconds(self.grace_s) and self.grace_s >= 0):
            raise ValueError(f"run grace_s must be a number of seconds >= 0, got {self.grace_s!r}")

    def command(self) -> list[str]:
        return [sys.executable, *self.argv[1:]] if self.argv[0] == "python" else list(self.argv)

    def environment(self) -> dict[str, str]:
        # Unbuffered by default so a Python lever's log lines interleave with its events as written.
        return {"PYTHONUNBUFFERED": "1", **os.environ, **dict(self.env)}


@dataclass
class RunOutcome:
    """How a run ended and everything it reported."""

    status: str
    """One of STATUSES."""
    detail: str
    """One line on why: "exited 1", "exited 0 without a done event", "timed out after 60 s", ..."""
    exit_code: int | None = None
    """The process's exit status; negative for a signal; None when it never started."""
    pid: int | None = None
    pgid: int | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    qualities: list[dict[str, Any]] = field(default_factory=list)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    unavailable_reason: str | None = None
    log_tail: list[str] = field(default_factory=list)
    """The last lines of output, optseq's own "[optseq] ..." notes included."""
    log_path: str | None = None
    duration_s: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, transcript: Transcript, status: str, detail: str, *, started: float, log_path=None,
           **process: Any) -> "RunOutcome":
        """What a transcript gathered, ended with `status` (process: exit_code, pid, pgid where known)."""
        return cls(status=status, detail=detail, events=transcript.events, samples=transcript.samples,
                   qualities=transcript.qualities, criteria=transcript.criteria, env=transcript.env,
                   unavailable_reason=transcript.unavailable_reason, log_tail=list(transcript.tail),
                   duration_s=time.monotonic() - started, warnings=transcript.warnings,
                   log_path=str(log_path) if log_path is not None else None, **process)

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Launcher:
    """One run of one command. Make one per run; `cancel` may come from any thread, before or during `run`."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.pid: int | None = None
        self.pgid: int | None = None
        self._cancelled = False
        self._used = False
        # A self-pipe wakes the waiting thread on cancel. It lives as long as the Launcher, so
        # cancel() never writes to an fd number that was closed and reused elsewhere.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def __del__(self) -> None:
        for fd in (getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):
            if fd is not None:
                os.close(fd)

    def cancel(self) -> None:
        """Stop the run: SIGTERM to its group, SIGKILL after grace_s; status "cancelled". Idempotent.

        No locks, so a signal handler (the CLI's Ctrl-C) may call it too.
        """
        self._cancelled = True
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # the pipe is full, so a wake-up is already pending

    def run(self, on_event: Callable[[dict[str, Any]], None] | None = None,
            on_log: Callable[[str], None] | None = None,
            on_start: Callable[[int, int], None] | None = None) -> RunOutcome:
        """Start the command, stream its output to the callbacks, return when it and its group are gone.

        on_start(pid, pgid) comes once the process exists (record them before anything can go
        wrong); on_event(event) for each protocol event; on_log(line) for every other line and for
        optseq's own notes. All from this thread. If a callback raises (or Ctrl-C lands), the
        process group is killed before the exception propagates. Raises OSError only when the log
        file cannot be written; a command that cannot start is a "failed" outcome.
        """
        if self._used:
            raise RuntimeError("a Launcher runs once; make a new one for the next run")
        self._used = True
        with log_file(self.spec) as log:
            return self._run(Transcript(log, on_event, on_log), on_start)

    # ---- internals -----------------------------------------------------------------------

    def _run(self, transcript: Transcript, on_start: Callable[[int, int], None] | None) -> RunOutcome:
        started = time.monotonic()
        if self._cancelled:
            transcript.note("cancelled before it started")
            return self._outcome(transcript, "cancelled", "cancelled before it started", None, started)
        _adopt_orphans()
        try:
            proc = subprocess.Popen(
                self.spec.command(), cwd=self.spec.cwd, env=self.spec.environment(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent(), bufsize=0,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            detail = f"could not start {self.spec.argv[0]!r}: {exc}"
            transcript.note(detail)
            return self._outcome(transcript, "failed", detail, None, started)
        # start_new_session: the child is the leader of a new session and group, so pgid == pid.
        self.pid = self.pgid = proc.pid
        finished, stopped, killed = False, None, False
        try:
            if on_start is not None:
                on_start(proc.pid, proc.pid)
            stopped, killed = self._watch(proc, transcript, started)
            finished = True
        finally:
            self._end(proc, transcript, drain=finished, ended_itself=finished and stopped is None)
        return self._outcome(transcript, *self._verdict(proc.returncode, transcript, stopped, killed),
                             proc.returncode, started)

    def _watch(self, proc: subprocess.Popen, transcript: Transcript, started: float) -> tuple[str | None, bool]:
        """Read output until the lead process exits (left unreaped, so its pgid cannot be reused yet).

        Returns (why it was stopped: "timeout" / "cancelled" / None, whether SIGKILL was needed).
        """
        out = proc.stdout.fileno()
        os.set_blocking(out, False)
        pidfd = _pidfd(proc.pid)
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ, "out")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        deadline = started + self.spec.timeout_s if self.spec.timeout_s else None
        stopped: str | None = None
        kill_at: float | None = None
        killed = False
        exited = False
        try:
            while not exited:
                now = time.monotonic()
                due = [t for t in (None if stopped else deadline, None if killed else kill_at) if t is not None]
                wait = min([max(0.0, t - now) for t in due] + ([_TICK_S] if pidfd is None else []), default=None)
                for key, _ in sel.select(wait):
                    if key.data == "out":
                        chunk = _read(out)
                        if chunk == b"":
                            sel.unregister(out)  # stdout closed; the process may still run
                        elif chunk:
                            transcript.feed(chunk)
                    elif key.data == "wake":
                        _read(self._wake_r)
                    else:
                        exited = True
                if pidfd is None and not exited:
                    exited = _exited(proc.pid)
                if exited:
                    break
                now = time.monotonic()
                if stopped is None:
                    if self._cancelled:
                        stopped = "cancelled"
                        transcript.note(f"cancelled: SIGTERM to process group {proc.pid}")
                    elif deadline is not None and now >= deadline:
                        stopped = "timeout"
                        transcript.note(f"timed out after {self.spec.timeout_s:g} s: "
                                        f"SIGTERM to process group {proc.pid}")
                    if stopped:
                        _signal_group(proc.pid, signal.SIGTERM)
                        kill_at = now + self.spec.grace_s
                if kill_at is not None and not killed and now >= kill_at:
                    transcript.note(f"still running {self.spec.grace_s:g} s after SIGTERM: "
                                    f"SIGKILL to process group {proc.pid}")
                    _signal_group(proc.pid, signal.SIGKILL)
                    killed = True
        finally:
            sel.close()
            if pidfd is not None:
                os.close(pidfd)
        return stopped, killed

    def _end(self, proc: subprocess.Popen, transcript: Transcript, drain: bool, ended_itself: bool) -> None:
        """Kill whatever is left of the group, reap it, then read what is still in the pipe."""
        pgid = proc.pid
        try:
            if ended_itself and [p for p in _members(pgid) if p != pgid]:
                transcript.note(f"the lever left processes running in group {pgid}: SIGKILL to the group")
            # The lead process is not reaped yet, so this pgid is still ours to signal.
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
            if not _reap_group(pgid, REAP_S) and drain:
                transcript.note(f"process group {pgid} still has members {REAP_S:g} s after SIGKILL")
            if drain:
                self._drain(proc, transcript)
        finally:
            proc.stdout.close()

    def _drain(self, proc: subprocess.Popen, transcript: Transcript) -> None:
        out = proc.stdout.fileno()
        end = time.monotonic() + DRAIN_S
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while True:
                if not sel.select(max(0.0, end - time.monotonic())):
                    transcript.note(f"output still open {DRAIN_S:g} s after the group ended "
                                    "(a process left the group?); stopped reading")
                    break
                chunk = _read(out)
                if chunk == b"":
                    break
                if chunk:
                    transcript.feed(chunk)
        transcript.finish()

    def _verdict(self, code: int | None, transcript: Transcript, stopped: str | None,
                 killed: bool) -> tuple[str, str]:
        after_kill = f"; killed {self.spec.grace_s:g} s after SIGTERM" if killed else ""
        if stopped == "timeout":
            return "timeout", f"timed out after {self.spec.timeout_s:g} s{after_kill}"
        if stopped == "cancelled":
            return "cancelled", f"cancelled{after_kill}"
        if transcript.failure is not None:
            return "failed", transcript.failure
        if code == 0 and transcript.unavailable_reason is not None:
            return "unavailable", f"unavailable: {transcript.unavailable_reason}"
        if code == 0 and transcript.done:
            return "succeeded", "exited 0 after done"
        if code == 0:
            return "failed", "exited 0 without a done event"
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return "failed", f"killed by {name}"
        return "failed", f"exited {code}"

    def _outcome(self, transcript: Transcript, status: str, detail: str, code: int | None,
                 started: float) -> RunOutcome:
        return RunOutcome.of(transcript, status, detail, started=started, log_path=self.spec.log_path,
                             exit_code=code, pid=self.pid, pgid=self.pgid)


@contextlib.contextmanager
def log_file(spec: RunSpec) -> Iterator[BinaryIO | None]:
    """The run's log file, opened for the whole run (its folders made); None when the spec keeps no log."""
    if spec.log_path is None:
        yield None
        return
    path = Path(spec.log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as log:
        yield log


def run(spec: RunSpec, on_event: Callable[[dict[str, Any]], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        on_start: Callable[[int, int], None] | None = None) -> RunOutcome:
    """`Launcher(spec).run(...)` for callers that never cancel."""
    return Launcher(spec).run(on_event, on_log, on_start)


def kill_group(pgid: int, run_id: str | None = None, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group (a run's leftovers); False when there is no such group.

    Meant for groups this process did not start (an earlier optseq's run); for a live run, cancel it.
    With run_id, only a group with a live member started with OPTSEQ_RUN_ID=run_id is signalled:
    a pgid recorded long ago may name somebody else's group by now.
    """
    if not _valid(pgid) or (run_id is not None and not _members(pgid, run_id)):
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    _reap_group(pgid, 0.0)
    return True


def group_alive(pgid: Any, run_id: str | None = None) -> bool:
    """Whether a process group has a live member. Zombies do not count: they are dead, just unreaped.

    With run_id, only members whose environment holds OPTSEQ_RUN_ID=run_id count (Linux /proc).
    """
    if not _valid(pgid):
        return False
    if run_id is not None:
        return bool(_members(pgid, run_id))
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; it is somebody else's
    if not Path("/proc/self/stat").exists():
        return True
    return bool(_members(pgid))


def _seconds(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _valid(pgid: Any) -> bool:
    # pgid 0 or 1 would signal our own group or init's: never a run's.
    return isinstance(pgid, int) and not isinstance(pgid, bool) and pgid > 1


def _members(pgid: int, run_id: str | None = None) -> list[int]:
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
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            if tag is None or tag in _environ(entry):
                members.append(int(entry))
    return members


def _environ(pid: str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _reap_group(pgid: int, within_s: float) -> bool:
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


def _read(fd: int) -> bytes | None:
    """A chunk; b"" at end of file; None when nothing is there after all."""
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None


def _pidfd(pid: int) -> int | None:
    """An fd that turns readable when the process exits; None where the OS has no pidfd."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exited(pid: int) -> bool:
    # WNOWAIT: look without reaping, so the pgid stays reserved until the group is killed.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGKILL the child when the forking thread dies (Linux)."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def setup() -> None:
        # Runs in the child between fork and exec: two calls, nothing that allocates or locks.
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)  # the parent died before the request took hold

    return setup


@functools.cache
def _adopt_orphans() -> None:
    """Become a child subreaper once, so a lever's orphaned children are ours to kill and reap."""
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
