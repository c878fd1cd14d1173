"""What every runner speaks: a run's spec and outcome, the runner error, and how runs are named on a cluster.

Everything above a runner (the pass loop, statistics, decisions, store, CLI, console) sees one interface:
`runner.launch(spec, run_id=..., attempt=...)` gives a Launch, whose `run(on_event, on_log, on_start)` streams
the command's output through the run protocol and returns a RunOutcome, and whose `cancel()` may come from any
thread. `on_start(fields)` gets what the run record must keep to find the run again (a pid and process group
here; a Ray submission id there). Runners: `local` (the default, local.py) and `ray` (ray_jobs.py); choose.py picks one.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from optseq.state.runners.protocol import Transcript



class RunnerError(Exception):
    """A runner that cannot be set up as asked; str() is the one line shown to the user."""


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
    """One of kinds.ENDED (a RunStatus)."""
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
    leftovers: list[dict[str, Any]] = field(default_factory=list)
    """Processes the launch left running that optseq stopped after it: {"pid", "cmd", "launch"} each."""

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


def _seconds(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def store_tag(db: Path) -> str:
    """Tells two stores' run 1 apart on one cluster (a Ray submission id must be unique there)."""
    return hashlib.sha1(f"{os.uname().nodename}:{Path(db).resolve()}".encode()).hexdigest()[:8]
