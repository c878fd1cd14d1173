"""The local runner: a lever's command in its own process group here, under a shim of its own; its output read
as it arrives; timeout, cancel.

Threads. `Launcher.run` starts the launch and waits for it in the calling thread, and calls
every callback (`on_start`, `on_event`, `on_log`) from that same thread; there is no reader
thread. Run it where blocking is fine: the CLI's main thread, or a TUI worker thread that
hands updates to the UI with `call_from_thread`. `cancel()` may be called from any thread.

Orphans. Each launch runs under its own shim (shim.py, started through shim_link.py): the lever's child
subreaper, so whatever the lever leaves (in its group, or outside it by setsid, a double fork, an environment
wiped) is the shim's descendant and comes back to it; when the lever ends, the shim kills its group, stops and
reaps the rest, and reports each, so the run says what its own launch left (`leftovers`). The shim gets
PR_SET_PDEATHSIG and watches its control pipe, so it ends the launch even when optseq is SIGKILLed. The kernel
fires the death signal when the *thread* that forked the shim exits, which is why the thread that starts it
(inside `run`) is the thread that waits for the run: never start a run in a short-lived thread and hand it to
another. The run record keeps the lever's process group (`pgid`), so a later optseq can still find what a
SIGKILLed shim could not end with `group_alive` and end it with `kill_group`.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from optseq.state.runners import leftovers, shim
from optseq.state.runners.interface import RunOutcome, RunSpec, log_file
from optseq.state.runners.protocol import Transcript
from optseq.state.runners.shim_link import ShimLink

DRAIN_S = 1.0
"""How long to keep reading after the launch ended: a process outside the lever's tree may hold the pipe."""
_CHUNK = 65536


class Launcher:
    """One run of one command. Make one per run; `cancel` may come from any thread, before or during `run`."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.pid: int | None = None
        self.pgid: int | None = None
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
        try:
            link = ShimLink.start(self.spec)
        except (OSError, subprocess.SubprocessError) as exc:
            return self._unstarted(transcript, str(exc), started)
        finished, stopped, killed = False, None, False
        try:
            stopped, killed = self._watch(link, transcript, started, on_start)
            finished = True
        finally:
            self._end(link, transcript, drain=finished)
        if link.error is not None:
            return self._unstarted(transcript, link.error, started)
        return self._outcome(transcript, *self._verdict(link.code, transcript, stopped, killed), link.code, started)

    def _unstarted(self, transcript: Transcript, error: str, started: float) -> RunOutcome:
        detail = f"could not start {self.spec.argv[0]!r}: {error}"
        transcript.note(detail)
        return self._outcome(transcript, "failed", detail, None, started)

    def _watch(self, link: ShimLink, transcript: Transcript, started: float,
               on_start: Callable[[int, int], None] | None) -> tuple[str | None, bool]:
        """Read output and the shim's reports until the shim has ended the launch (its report pipe closed).

        Returns (why the lever was stopped: "timeout" / "cancelled" / None, whether SIGKILL was needed).
        """
        out = link.out
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ, "out")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        sel.register(link.reports, selectors.EVENT_READ, "report")
        deadline = started + self.spec.timeout_s if self.spec.timeout_s else None
        stopped: str | None = None
        kill_at: float | None = None
        killed = False
        try:
            while not link.ended:
                now = time.monotonic()
                due = [t for t in (None if stopped else deadline, None if killed else kill_at) if t is not None]
                wait = min([max(0.0, t - now) for t in due], default=None) if self._running(link) else None
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
                        for kind in link.read():
                            self._take(kind, link, transcript, on_start)
                if not self._running(link):
                    continue  # not started yet, or ended: the shim is sweeping
                now = time.monotonic()
                if stopped is None:
                    if self._cancelled:
                        stopped = "cancelled"
                        transcript.note(f"cancelled: SIGTERM to process group {self.pid}")
                    elif deadline is not None and now >= deadline:
                        stopped = "timeout"
                        transcript.note(f"timed out after {self.spec.timeout_s:g} s: "
                                        f"SIGTERM to process group {self.pid}")
                    if stopped:
                        link.ask(shim.TERM)
                        kill_at = now + self.spec.grace_s
                if kill_at is not None and not killed and now >= kill_at:
                    transcript.note(f"still running {self.spec.grace_s:g} s after SIGTERM: "
                                    f"SIGKILL to process group {self.pid}")
                    link.ask(shim.KILL)
                    killed = True
        finally:
            sel.close()
        return stopped, killed

    def _running(self, link: ShimLink) -> bool:
        return self.pid is not None and link.code is None

    def _take(self, kind: str, link: ShimLink, transcript: Transcript,
              on_start: Callable[[int, int], None] | None) -> None:
        """One of the shim's reports (shim_link.py lists them), said where the run says it."""
        if kind == "start" and link.pid is not None:
            # the lever leads a new session and group of its own, so pgid == pid
            self.pid = self.pgid = link.pid
            if on_start is not None:
                on_start(self.pid, self.pgid)
        elif kind == "group":
            transcript.note(f"the lever left processes running in group {self.pgid}: SIGKILL to the group")
        elif kind == "group_stuck" and link.code is not None:
            transcript.note(f"process group {self.pgid} still has members {shim.REAP_S:g} s after SIGKILL")
        elif kind == "swept":
            self._said_left(transcript, link)

    def _said_left(self, transcript: Transcript, link: ShimLink) -> None:
        """Processes the lever left outside its group (setsid, a daemon, one that wiped its environment) outlive
        the group's kill: the shim stopped and reaped them; said on the run."""
        lead = self.pid or 0
        if link.left:
            text = leftovers.said(lead, link.left)
            transcript.note(text)
            transcript.warn(text)
            self.left.extend({"pid": pid, "cmd": cmd, "launch": lead} for pid, cmd in link.left)
        if link.stuck:
            transcript.note(f"processes left outside the group still alive {shim.REAP_S:g} s after SIGKILL: "
                            + ", ".join(f"pid {pid}" for pid in link.stuck))

    def _end(self, link: ShimLink, transcript: Transcript, drain: bool) -> None:
        """The shim ends the launch (at once, where the run was given up: a raising callback, Ctrl-C); what it
        reports is said, then what is still in the pipe is read."""
        try:
            if not link.ended:
                link.give_up()
                for kind in link.read_all():
                    self._take(kind, link, transcript, None)
            link.wait()
            if drain:
                self._drain(link.out, transcript)
        finally:
            link.close()

    def _drain(self, out: int, transcript: Transcript) -> None:
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
