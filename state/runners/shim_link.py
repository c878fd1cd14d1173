"""optseq's end of a launch's shim (shim.py): it starts the shim, asks it to stop the lever, reads its reports.

The shim is run with this interpreter in isolated mode without site (`python -I -S -c ...`, COMMAND): it imports
only the standard library, so neither the lever's PYTHONPATH nor the site's start-up is its business, and shim.py
is imported, not run as a script, so its bytecode is compiled once, not at every launch. Its pipes:
  fd 0     the control pipe: a header line `GRACE_S REPORTS_FD N`, then the lever's argv in N bytes (NUL between
           arguments), then one byte per request: T (SIGTERM to the lever's process group) or K (SIGKILL to it).
           Its end of file means optseq is gone, or gave the launch up: the group is SIGKILLed at once and the rest
           stopped.
  fd 1, 2  where the lever's output goes (the lever gets them; the shim lets go of them once it started);
  REPORTS  one line per report, in this order: `start PID` or `error TEXT`; `exit CODE` once the lead process has
           exited by itself or been stopped (CODE as subprocess gives it, negative for a signal); `group N` when
           the lever, ending by itself, left N processes in its group; `group_stuck` when the group outlived
           SIGKILL by REAP_S; `left PID COMMAND` for each process it left outside its group, stopped and reaped;
           `stuck PID` for each of those alive REAP_S after SIGKILL; `swept` last.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from optseq.state.runners import groups, shim
from optseq.state.runners.interface import RunSpec


COMMAND = ("import sys; sys.path.append({folder!r}); import shim; shim.main()"
           .format(folder=os.path.dirname(os.path.abspath(shim.__file__))))
"""The shim's folder after the standard library's on its path: no module of that folder shadows one of those."""


class ShimLink:
    """One launch's shim, seen from optseq: its pipes, and what it reported so far (the module says the reports)."""

    def __init__(self, proc: subprocess.Popen[bytes], control: int, reports: int) -> None:
        self.proc = proc
        self.control: int | None = control
        self.reports = reports
        assert proc.stdout is not None  # started with stdout=PIPE
        self.out = proc.stdout.fileno()
        """The lever's output (stdout and stderr), non-blocking."""
        self.pid: int | None = None
        """The lever's lead process, the leader of its own session and process group (pgid == pid)."""
        self.error: str | None = None
        """Why the lever could not start, where it could not."""
        self.code: int | None = None
        """The lever's exit code once its lead has exited (negative for a signal)."""
        self.group = 0
        """Processes the lever, ending by itself, left in its group (SIGKILLed with it)."""
        self.group_stuck = False
        self.left: list[tuple[int, str]] = []
        """(pid, command line) of each process the lever left outside its group, stopped and reaped."""
        self.stuck: list[int] = []
        self.ended = False
        """The report pipe closed: the shim is gone, and with it every process of the launch."""
        self._partial = b""

    @classmethod
    def start(cls, spec: RunSpec) -> ShimLink:
        """Start the shim for this spec (in the spec's folder, with its environment); raises OSError or
        SubprocessError when even the shim cannot start (a missing folder)."""
        control_r, control_w = os.pipe()
        reports_r, reports_w = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", COMMAND], cwd=spec.cwd, env=spec.environment(),
                stdin=control_r, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(reports_w,),
                start_new_session=True, preexec_fn=groups.die_with_parent(signal.SIGTERM), bufsize=0)
        except BaseException:
            for fd in (control_r, control_w, reports_r, reports_w):
                os.close(fd)
            raise
        os.close(control_r)
        os.close(reports_w)
        argv = b"\0".join(os.fsencode(arg) for arg in spec.command())
        header = memoryview(f"{float(spec.grace_s)!r} {reports_w} {len(argv)}\n".encode() + argv)
        try:
            while header:  # a long argv fills the pipe: the shim reads it as it comes
                header = header[os.write(control_w, header):]
        except OSError:
            pass  # the shim died before it read it: its report pipe ends, and its exit status says how
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        os.set_blocking(reports_r, False)
        return cls(proc, control_w, reports_r)

    def ask(self, request: bytes) -> None:
        """shim.TERM or shim.KILL to the lever's group."""
        if self.control is None:
            return
        try:
            os.write(self.control, request)
        except OSError:
            pass  # the shim is ending: its report pipe says so next

    def give_up(self) -> None:
        """Close the control pipe: the shim kills the lever's group at once and stops what it left."""
        if self.control is not None:
            os.close(self.control)
            self.control = None

    def read(self) -> list[str]:
        """The kinds of the reports that arrived ("start", "exit", …), their content kept here; the link is
        marked ended at the pipe's end."""
        try:
            chunk = os.read(self.reports, 65536)
        except BlockingIOError:
            return []
        if not chunk:
            self.ended = True
            return []
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        return [self._take(line) for line in lines if line]

    def _take(self, line: bytes) -> str:
        kind, _, rest = line.decode(errors="replace").partition(" ")
        if kind == "start":
            self.pid = int(rest)
        elif kind == "error":
            self.error = rest
        elif kind == "exit":
            self.code = int(rest)
        elif kind == "group":
            self.group = int(rest)
        elif kind == "group_stuck":
            self.group_stuck = True
        elif kind == "left":
            pid, _, cmd = rest.partition(" ")
            self.left.append((int(pid), cmd))
        elif kind == "stuck":
            self.stuck.append(int(rest))
        return kind

    def read_all(self) -> list[str]:
        """Every report until the shim ends (blocking)."""
        os.set_blocking(self.reports, True)
        kinds: list[str] = []
        while not self.ended:
            kinds += self.read()
        return kinds

    def wait(self) -> None:
        """Reap the shim; a lever whose exit it never reported (a shim killed) ends as the shim did."""
        self.proc.wait()
        if self.code is None and self.error is None:
            self.code = self.proc.returncode

    def close(self) -> None:
        self.give_up()
        self.proc.wait()  # told to end the launch: it does, within the grace and REAP_S
        os.close(self.reports)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
