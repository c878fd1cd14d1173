"""The local runner: a lever's command in its own process group here, its output read as it arrives; timeout, cancel.

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
re-parented to optseq, however they left the group and whatever they did to their environment:
when the launch ends, leftovers.py stops and reaps each, and the run says which (`leftovers`).
"""
from __future__ import annotations

import os
import secrets
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from optseq.state.runners import groups, leftovers
from optseq.state.runners.interface import RunOutcome, RunSpec, log_file
from optseq.state.runners.protocol import Transcript

DRAIN_S = 1.0
"""How long to keep reading after the group is dead: a process that escaped the group may hold the pipe."""
REAP_S = 2.0
_TICK_S = 0.1
"""Exit polling interval where pidfd is missing (non-Linux, old kernels)."""
_CHUNK = 65536


class Launcher:
    """One run of one command. Make one per run; `cancel` may come from any thread, before or during `run`."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.pid: int | None = None
        self.pgid: int | None = None
        self.mark = secrets.token_hex(8)
        """This launch's MARK_ENV: what finds its processes that left the group."""
        self.left: list[dict[str, Any]] = []
        """What the launch left running and optseq stopped: {"pid", "cmd", "launch"} each."""
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
        env = {k: v for k, v in self.spec.environment().items() if k != leftovers.OWN_ENV}
        try:
            proc = leftovers.start(lambda: subprocess.Popen(
                self.spec.command(), cwd=self.spec.cwd, env={**env, groups.MARK_ENV: self.mark},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=groups.die_with_parent(), bufsize=0,
            ), self.mark)
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
        pidfd = groups.pidfd(proc.pid)
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
                    exited = groups.exited(proc.pid)
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
                        groups.signal_group(proc.pid, signal.SIGTERM)
                        kill_at = now + self.spec.grace_s
                if kill_at is not None and not killed and now >= kill_at:
                    transcript.note(f"still running {self.spec.grace_s:g} s after SIGTERM: "
                                    f"SIGKILL to process group {proc.pid}")
                    groups.signal_group(proc.pid, signal.SIGKILL)
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
            if ended_itself and [p for p in groups.members(pgid) if p != pgid]:
                transcript.note(f"the lever left processes running in group {pgid}: SIGKILL to the group")
            # The lead process is not reaped yet, so this pgid is still ours to signal.
            groups.signal_group(pgid, signal.SIGKILL)
            proc.wait()
            if not groups.reap_group(pgid, REAP_S) and drain:
                transcript.note(f"process group {pgid} still has members {REAP_S:g} s after SIGKILL")
            self._end_escaped(transcript, pgid)
            if drain:
                self._drain(proc, transcript)
        finally:
            proc.stdout.close()

    def _end_escaped(self, transcript: Transcript, lead: int) -> None:
        """Processes the lever left outside its group (setsid, a daemon, one that wiped its environment) outlive
        the group's kill: stopped, reaped and said on the run (leftovers.py finds them)."""
        stopped, stuck = leftovers.stop_left(lead, self.mark, self.spec.grace_s)
        if stopped:
            text = leftovers.said(lead, stopped)
            transcript.note(text)
            transcript.warn(text)
            self.left.extend({"pid": pid, "cmd": cmd, "launch": lead} for pid, cmd in stopped)
        if stuck:
            transcript.note(f"processes left outside the group still alive {leftovers.REAP_S:g} s after SIGKILL: "
                            + ", ".join(f"pid {pid}" for pid in stuck))

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
                             exit_code=code, pid=self.pid, pgid=self.pgid, leftovers=list(self.left))



def run(spec: RunSpec, on_event: Callable[[dict[str, Any]], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        on_start: Callable[[int, int], None] | None = None) -> RunOutcome:
    """`Launcher(spec).run(...)` for callers that never cancel."""
    return Launcher(spec).run(on_event, on_log, on_start)


def _read(fd: int) -> bytes | None:
    """A chunk; b"" at end of file; None when nothing is there after all."""
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None


class LocalRunner:
    name = "local"

    def launch(self, spec: RunSpec, *, run_id: int, attempt: int, resources=None, tag: str = "") -> LocalLaunch:
        return LocalLaunch(spec)


class LocalLaunch:
    def __init__(self, spec: RunSpec):
        self.launcher = Launcher(spec)

    def cancel(self) -> None:
        self.launcher.cancel()

    def run(self, on_event=None, on_log=None, on_start=None) -> RunOutcome:
        started = None if on_start is None else (lambda pid, pgid: on_start({"child_pid": pid, "pgid": pgid}))
        return self.launcher.run(on_event=on_event, on_log=on_log, on_start=started)
