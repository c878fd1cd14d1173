"""A daemon a lever leaves behind is stopped when its launch ends, and the run says so, even when it wiped its
trail: double-forked into a session of its own and exec'd with an empty environment, so neither the launch's
process group nor its mark in the environment finds it. optseq is its lever's child subreaper: such orphans come
back to it, and every process that outlives its launch is stopped, reaped and reported on the run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ

WIPES = Path(__file__).with_name("lever_scripts") / "wipes_its_trail.py"
MARK = "optseq-test-wiped-daemon"


def plan(tmp_path: Path, argv: list[str]) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"""[plan]
title = "Wiped daemons"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "leaky"
title = "Leaky"
kind = "speedup"
plan_doc = "docs/leaky.md"
run = {json.dumps(argv)}
timeout_s = 120
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
""", encoding="utf-8")
    return path


def optseq(env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return proc


def left(folder: Path) -> dict[int, str]:
    """The daemons' and workers' pids as they wrote them: pid → role."""
    return {int(p.name): p.read_text() for p in folder.iterdir() if p.name.isdigit()}


def alive(pid: int) -> bool:
    """Running, and still the process that wrote the pid (its command line holds MARK): a zombie is dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X") and MARK.encode() in cmdline


@pytest.fixture
def kill_left():
    """Whatever a failing test leaves running is ended here, so one failure does not leave daemons behind."""
    folders: list[Path] = []
    yield folders.append
    import os
    import signal
    for folder in folders:
        for pid in left(folder) if folder.exists() else ():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
@pytest.mark.parametrize("stubborn", [False, True], ids=["leaves", "ignores-sigterm"])
def test_a_daemon_that_wipes_its_environment_is_stopped_and_said(tmp_path, cli_env, kill_left, stubborn):
    folder = tmp_path / "daemons"
    folder.mkdir()
    kill_left(folder)
    argv = [sys.executable, str(WIPES), str(folder), *(["--stubborn"] if stubborn else [])]
    env = {**cli_env, "OPTSEQ_PLAN": str(plan(tmp_path, argv))}
    optseq(env, "--run", "leaky", "--json")
    pids = left(folder)
    launches = len(list(Path(json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]["log"]).parent.glob("*.log")))
    daemons = 1 if stubborn else launches  # a stubborn one is left by the first launch only
    assert sorted(pids.values()).count("daemon") == daemons >= 1, pids
    assert [pid for pid in pids if alive(pid)] == [], pids  # none outlives the --run
    record = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    said = [w for w in record["warnings"] if "stopped" in w and "left by launch" in w]
    for pid in pids:  # each named on the run, with its command, in its launch's line and the record
        assert any(f"pid {pid} (" in w for w in said), (pid, record["warnings"])
    assert sorted(p["pid"] for p in record["leftovers"]) == sorted(pids), record["leftovers"]
    assert all(MARK in p["cmd"] for p in record["leftovers"]), record["leftovers"]
    log = "".join(p.read_text() for p in Path(record["log"]).parent.glob("*.log"))
    assert log.count("left by launch") == daemons, log[-2000:]
    table = optseq(env, "runs").stdout
    assert f"stopped {len(pids)} processes its launches left running" in table, table
