"""Run `python -m optseq.engine.bench LEVER` as a child process, as optseq does, and read back what it said."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from optseq.engine.bench.report import LeverRun, parse_lines

# optseq sets these for the bench children of the workload it runs, and a developer may have them in the
# shell; a test run under either would otherwise hand them on: OPTSEQ_INFRA changes the model and the
# adopted levers, OPTSEQ_REPEATS/OPTSEQ_WARMUP fill in whatever argv leaves out, OPTSEQ_PUREPYTHON swaps
# the bot's twin. A test names the conditions it asserts about, so the child sees only those.
INHERITED_KNOBS = ("OPTSEQ_INFRA", "OPTSEQ_REPEATS", "OPTSEQ_WARMUP", "OPTSEQ_PUREPYTHON")


def run_bench(lever: str, *argv: str, infra: dict | None = None, artifacts: str | Path | None = None,
              env: dict[str, str] | None = None,
              timeout: float = 1800) -> tuple[subprocess.CompletedProcess, LeverRun]:
    """The finished child and its parsed events; `env` is applied last, so it may set any knob above.

    `timeout` only guards against a hang: a loaded machine may take many times the idle time."""
    child_env = {k: v for k, v in os.environ.items() if k not in INHERITED_KNOBS}
    if infra is not None:
        child_env["OPTSEQ_INFRA"] = json.dumps(infra)
    if artifacts is not None:
        child_env["OPTSEQ_ARTIFACTS"] = str(artifacts)
    child_env.update(env or {})
    # stdin closed: a bench that tried to prompt would hang the suite instead of failing it
    proc = subprocess.run([sys.executable, "-m", "optseq.engine.bench", lever, *argv], capture_output=True,
                          text=True, env=child_env, stdin=subprocess.DEVNULL, timeout=timeout)
    run = parse_lines(lever, proc.stdout.splitlines())
    run.returncode = proc.returncode
    return proc, run


def events(stdout: str) -> list[dict]:
    """Every protocol event in the order the child wrote it, progress included (LeverRun keeps neither)."""
    out = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            out.append(obj)
    return out
