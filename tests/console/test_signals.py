"""SIGTERM (a CI job cancelled) and SIGHUP (an SSH session gone) end `optseq --run LEVER`, `--run watch` and
`optseq compare` as Ctrl-C does: the run recorded `cancelled`, the arm or the setup it ran stopped with its
children, and the exit code the signal's; SIGTERM to the console, and a terminal that hangs up under `--run`, too.
Through the real CLI, on a throwaway repository (tests/code_repo.py) whose bench or setup is a stand-in held at a
known point (lever_scripts/held.py): it writes its pids, then blocks until it is stopped."""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.code_repo import make_repo
from tests.conftest import OPTSEQ
from tests.console.test_hangup import _console, _gone, _processes
from tests.console.test_tmux import OPTSEQ as TMUX_OPTSEQ, TMUX, Terminal, terminal  # noqa: F401  (the fixture)
from tests.state.code.test_branch_levers import cli

HELD = Path(__file__).resolve().parent.parent / "state" / "lever_scripts" / "held.py"
CEILING_S = 300.0
"""A guard against a hang while the stand-in is awaited, never a budget: the test waits for its file."""
WORKLOAD = 'command = ["python", "bench.py"]'
FLAG = '''
[[levers]]
id = "flag"
title = "a flag, no branch"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }
[levers.arms]
candidate_env = { FLAG = "1" }
'''


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _held_plan(repo, where: str) -> Path:
    """The repository's plan with the stand-in as the workload's command (`arm`) or as its setup (`setup`)."""
    text = (repo.root / "optseq.toml").read_text(encoding="utf-8")
    held = f'["python", "{HELD}"]'
    if where == "arm":
        text = text.replace(WORKLOAD, f"command = {held}")
    else:
        text = text.replace(WORKLOAD, f"{WORKLOAD}\nsetup = {held}")
    plan = repo.root / "held.toml"
    plan.write_text(text, encoding="utf-8")
    return plan


def _held(folder: Path, running, where: str) -> list[int]:
    """The stand-in's pids, once it has written them: it is running, past its start, its child started."""
    end = time.monotonic() + CEILING_S
    while not (folder / "pids").exists():
        assert running(), f"optseq ended before the {where} was held"
        assert time.monotonic() < end, f"the {where} never started"
        time.sleep(0.02)
    return [int(p) for p in (folder / "pids").read_text().split()]


def _signalled(repo, plan: Path, db: Path, folder: Path, args: list[str], sig: int, where: str):
    """optseq run with `args` until the stand-in is held, then sent `sig`: (its exit code, stderr and stdout, what
    is left alive of the stand-in and its child, killed after the look)."""
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], cwd=repo.root,
                            env={**os.environ, "HELD_DIR": str(folder)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    out = err = ""
    try:
        pids = _held(folder, lambda: proc.poll() is None, where)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=CEILING_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        left = _killed(pids)
    return proc.returncode, err + out, left


def _killed(pids: list[int]) -> list[int]:
    """Those of `pids` still alive, then killed: the code before left them running, never beyond the test."""
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.slow  # a branch lever's worktrees and a launch
@pytest.mark.parametrize("where", ["arm", "setup"])
@pytest.mark.parametrize("command", ["run", "compare"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_cancel_the_run_record_it_and_leave_nothing_running(tmp_path, where, command, sig):
    repo = make_repo(tmp_path)
    plan, db, folder = _held_plan(repo, where), tmp_path / "db", tmp_path / "held"
    folder.mkdir()
    args = ["--run", "fast"] if command == "run" else ["compare", "main", "fast"]
    code, err, left = _signalled(repo, plan, db, folder, args, sig, where)
    assert not left, f"still running after optseq exited on {sig.name}: {left}"
    assert code == 128 + sig, (code, err)
    assert f"{sig.name}: cancelling" in err and "Traceback" not in err, err
    assert "cancelled  (cancelled)" not in err, err  # the summary line says it once
    (run,) = json.loads(cli(repo, db, "runs", "--json", plan=plan).stdout)["runs"]
    assert run["status"] == "cancelled" and run["ended"], run
    assert run.get("kind") == ("compare" if command == "compare" else None)


@pytest.mark.slow  # a launch
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_watch_ends_on_sigterm_and_sighup_cancelled_with_nothing_left(tmp_path, sig):
    # the nightly job: an adopted flag lever re-measured, its arm the stand-in
    repo = make_repo(tmp_path, levers_extra=FLAG)
    plan, db, folder = _held_plan(repo, "arm"), tmp_path / "db", tmp_path / "held"
    folder.mkdir()
    cli(repo, db, "decide", "flag", "adopt", "--why", "adopted by hand", plan=plan)
    code, err, left = _signalled(repo, plan, db, folder, ["--run", "watch"], sig, "watch's arm")
    assert not left, f"still running after optseq exited on {sig.name}: {left}"
    assert code == 128 + sig and f"{sig.name}: cancelling" in err, (code, err)
    (run,) = json.loads(cli(repo, db, "runs", "--json", plan=plan).stdout)["runs"]
    assert run["status"] == "cancelled" and run["watch"] and run["ended"], run


@pytest.mark.slow  # a real terminal, a branch lever's worktrees
@pytest.mark.skipif(TMUX is None or TMUX_OPTSEQ is None, reason="needs tmux and the installed optseq")
def test_sigterm_to_the_console_cancels_its_run_records_it_and_leaves_nothing_running(tmp_path, terminal):
    repo = make_repo(tmp_path)
    plan, db, folder = _held_plan(repo, "arm"), tmp_path / "db", tmp_path / "held"
    folder.mkdir()
    term = terminal(plan, db, HELD_DIR=str(folder))
    term.wait_for("next: fast")
    term.keys("r")  # the first row, fast: its arm is the stand-in, held
    pids = _held(folder, lambda: "OPTSEQ-EXIT=" not in term.screen(), "arm")
    try:
        os.kill(_console(db), signal.SIGTERM)
        term.wait_for("OPTSEQ-EXIT=")
    finally:
        left = _killed(pids)
    assert not left, f"still running after the console ended on SIGTERM: {left}"
    assert "OPTSEQ-EXIT=143" in term.screen()
    (run,) = json.loads(cli(repo, db, "runs", "--json", plan=plan).stdout)["runs"]
    assert run["status"] == "cancelled" and run["ended"], run


@pytest.mark.slow  # a real terminal, a branch lever's worktrees
@pytest.mark.skipif(TMUX is None or TMUX_OPTSEQ is None, reason="needs tmux and the installed optseq")
def test_a_run_whose_terminal_hangs_up_is_recorded_cancelled_with_nothing_left(tmp_path):
    # an SSH session gone: the terminal --run prints its bar on answers every write with EIO from then on
    repo = make_repo(tmp_path)
    plan, db, folder = _held_plan(repo, "arm"), tmp_path / "db", tmp_path / "held"
    folder.mkdir()
    term = Terminal(f"cd {shlex.quote(str(repo.root))} && {shlex.quote(TMUX_OPTSEQ)} --plan {shlex.quote(str(plan))} "
                    f"--db {shlex.quote(str(db))} --run fast", {"HELD_DIR": str(folder), "TERM": "xterm-256color"})
    try:
        pids = _held(folder, lambda: "OPTSEQ-EXIT=" not in term.screen(), "arm")
        optseq = _processes(lambda argv: str(db) in argv and "--run" in argv)
        assert optseq, "optseq is not running"
    finally:
        term.close()  # the terminal goes away: SIGHUP
    try:
        _gone(optseq)
    finally:
        left = _killed(pids)
    assert not left, f"still running after the terminal hung up: {left}"
    (run,) = json.loads(cli(repo, db, "runs", "--json", plan=plan).stdout)["runs"]
    assert run["status"] == "cancelled" and run["ended"], run
