"""optseq's end of a launch's shim (shim.py): it starts the shim, asks it to stop the lever, reads its reports.

The shim is run with this interpreter in isolated mode without site (`python -I -S shim.py`): it imports only
the standard library, so neither the lever's PYTHONPATH nor the site's start-up is its business.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import TypedDict

from optseq.state.runners import shim
from optseq.state.runners.interface import RunSpec


class Report(TypedDict, total=False):
    """One line of the shim's report pipe (shim.py says when each comes)."""

    start: int
    error: str
    exit: int
    group: int
    group_stuck: bool
    left: list[tuple[int, str]]
    stuck: list[int]


class ShimLink:
    """One launch's shim, seen from optseq: its pipes, and what it reported so far."""

    def __init__(self, proc: subprocess.Popen[bytes], control: int, reports: int) -> None:
        self.proc = proc
        self.control: int | None = control
        self.reports = reports
        assert proc.stdout is not None
        self.out = proc.stdout.fileno()
        """The lever's output (stdout and stderr), non-blocking."""
        self.code: int | None = None
        """The lever's exit code once its lead has exited (negative for a signal)."""
        self.error: str | None = None
        """Why the lever could not start, where it could not."""
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
                [sys.executable, "-I", "-S", shim.__file__], cwd=spec.cwd, env=spec.environment(),
                stdin=control_r, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(reports_w,),
                start_new_session=True, preexec_fn=shim.die_with_parent(signal.SIGTERM), bufsize=0)
        except BaseException:
            for fd in (control_r, control_w, reports_r, reports_w):
                os.close(fd)
            raise
        os.close(control_r)
        os.close(reports_w)
        header = {"argv": spec.command(), "grace_s": spec.grace_s, "reports": reports_w}
        try:
            os.write(control_w, json.dumps(header).encode() + b"\n")
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

    def read(self) -> list[Report]:
        """The reports that arrived (marking the link ended at the pipe's end)."""
        try:
            chunk = os.read(self.reports, 65536)
        except BlockingIOError:
            return []
        if not chunk:
            self.ended = True
            return []
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        reports: list[Report] = [json.loads(line) for line in lines if line]
        for report in reports:
            if "exit" in report:
                self.code = report["exit"]
            if "error" in report:
                self.error = report["error"]
        return reports

    def read_all(self) -> list[Report]:
        """Every report until the shim ends (blocking)."""
        os.set_blocking(self.reports, True)
        reports: list[Report] = []
        while not self.ended:
            reports += self.read()
        return reports

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
