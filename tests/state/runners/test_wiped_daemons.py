"""A daemon a lever leaves behind is stopped when its launch ends, and the run says so, even when it wiped its
trail: double-forked into a session of its own and exec'd with an empty environment, so neither the launch's
process group nor its environment finds it. Each launch runs under a shim of its own, its lever's child subreaper:
such orphans come back to it, and every process that outlives its launch is stopped, reaped and reported on the
run, as that launch's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.console.test_runs_table import lever

WIPES = (Path(__file__).parents[1] / "lever_scripts") / "wipes_its_trail.py"
MARK = "optseq-test-wiped-daemon"


def plan(tmp_path: Path, levers: dict[str, list[str]]) -> Path:
    """A plan of independent levers, id -> its command."""
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\ntitle = "Wiped daemons"\nas_of = 2026-11-01\nlang = "en"\n'
                    + "".join(lever(lever_id, argv) for lever_id, argv in levers.items()), encoding="utf-8")
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
    for folder in folders:
        for pid in left(folder) if folder.exists() else ():
            killed = alive(pid)
            if killed:
                os.kill(pid, signal.SIGKILL)
            try:  # a test that launched in this process made it their subreaper: reaped here
                os.waitpid(pid, 0 if killed else os.WNOHANG)
            except ChildProcessError:
                pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
@pytest.mark.parametrize("stubborn", [False, True], ids=["leaves", "ignores-sigterm"])
def test_a_daemon_that_wipes_its_environment_is_stopped_and_said(tmp_path, cli_env, kill_left, stubborn):
    folder = tmp_path / "daemons"
    folder.mkdir()
    kill_left(folder)
    argv = [sys.executable, str(WIPES), str(folder), *(["--stubborn"] if stubborn else [])]
    env = {**cli_env, "OPTSEQ_PLAN": str(plan(tmp_path, {"leaky": argv}))}
    run = optseq(env, "--run", "leaky")
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
    said_then = [line for line in run.stderr.splitlines() if "left by launch" in line]  # as each launch ended
    assert len(said_then) == daemons and all(f"pid {pid} (" in run.stderr for pid in pids), run.stderr
    summary = f"run {record['id']} leaky: succeeded"
    assert summary in run.stdout and "→ adopt  (95% lower bound" in run.stdout, run.stdout  # its conclusion whole
    log = "".join(p.read_text() for p in Path(record["log"]).parent.glob("*.log"))
    assert log.count("left by launch") == daemons, log[-2000:]
    table = optseq(env, "runs").stdout
    assert f"stopped {len(pids)} processes its launches left running" in table, table
    status = optseq(env, "status").stdout
    assert f"run {record['id']} stopped {len(pids)} processes its launches left running" in status, status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
def test_daemons_of_two_launches_at_once_are_all_stopped_and_each_said_once(tmp_path, cli_env, kill_left):
    """A parallel run: two levers, each leaving a wiped daemon, their first launches held until both run (a FIFO
    opened from both ends). Each launch's shim stops its own."""
    meet = tmp_path / "meet"
    os.mkfifo(meet)
    folders = {lever_id: tmp_path / lever_id for lever_id in ("one", "two")}
    for folder in folders.values():
        folder.mkdir()
        kill_left(folder)
    levers = {"one": [sys.executable, str(WIPES), str(folders["one"]), "--meet", str(meet)],
              "two": [sys.executable, str(WIPES), str(folders["two"]), "--meet", str(meet), "--reader"]}
    env = {**cli_env, "OPTSEQ_PLAN": str(plan(tmp_path, levers))}
    optseq(env, "--run", "ready", "--parallel", "2", "--json")
    pids = {pid for folder in folders.values() for pid in left(folder)}
    assert len(pids) >= 8, pids  # a daemon and its worker per launch, 2 launches or more each
    assert [pid for pid in pids if alive(pid)] == [], pids
    records = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    named = [p["pid"] for record in records for p in record.get("leftovers") or ()]
    assert sorted(named) == sorted(pids), records  # each on one run, once


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
def test_a_daemon_optseq_itself_left_is_not_taken_for_the_launchs(tmp_path, kill_left):
    """An orphan of optseq's own tools (git's detached gc), born while a launch runs, is none of the launch's: it
    outlives it; the lever's wiped one does not. In this process, as the console runs a lever in a worker
    thread."""
    from optseq.state.runners.interface import RunSpec
    from optseq.state.runners.local import Launcher

    gate, lever_folder, tool_folder = tmp_path / "gate", tmp_path / "lever", tmp_path / "tool"
    os.mkfifo(gate)
    for folder in (lever_folder, tool_folder):
        folder.mkdir()
        kill_left(folder)
    launcher = Launcher(RunSpec(argv=[sys.executable, str(WIPES), str(lever_folder), "--meet", str(gate), "--reader"],
                                env={"OPTSEQ_REPEATS": "2"}))
    up, outcome = threading.Event(), []
    thread = threading.Thread(target=lambda: outcome.append(launcher.run(
        on_log=lambda line: up.set() if line.startswith("daemon started") else None)))
    thread.start()
    assert up.wait(120)  # a hang guard: the lever's daemon is up and the lever waits at the gate
    subprocess.run([sys.executable, str(WIPES), str(tool_folder), "--tool"], check=True, timeout=120)
    with open(gate, "w"):
        pass
    thread.join(120)
    assert outcome and outcome[0].ok, outcome
    lever_left = left(lever_folder)
    assert len(left(tool_folder)) == 2 and all(alive(pid) for pid in left(tool_folder)), left(tool_folder)
    assert [pid for pid in lever_left if alive(pid)] == [], lever_left
    assert sorted(p["pid"] for p in outcome[0].leftovers) == sorted(lever_left), outcome[0].leftovers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
def test_a_child_optseq_started_in_a_session_of_its_own_before_a_launch_is_left_alone(tmp_path, kill_left):
    """A process optseq started itself, in a session of its own and without optseq's environment (a local cluster's
    `ray start`), before a launch: no descendant of the launch's shim, so none of a lever's."""
    from optseq.state.runners.interface import RunSpec
    from optseq.state.runners.local import Launcher

    lever_folder = tmp_path / "lever"
    lever_folder.mkdir()
    kill_left(lever_folder)
    node = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(60)", MARK], env={},
                            start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        outcome = Launcher(RunSpec(argv=[sys.executable, str(WIPES), str(lever_folder)],
                                   env={"OPTSEQ_REPEATS": "2"})).run()
        assert outcome.ok, outcome
        assert alive(node.pid) and node.poll() is None
        lever_left = left(lever_folder)
        assert len(lever_left) == 2 and [pid for pid in lever_left if alive(pid)] == [], lever_left
        assert sorted(p["pid"] for p in outcome.leftovers) == sorted(lever_left), outcome.leftovers
    finally:
        node.kill()
        node.wait()
