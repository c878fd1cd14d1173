"""A SIGKILLed `optseq --run` leaves nothing of its launch running, not even a daemon its lever double-forked with
its environment wiped: the launch's shim gets PR_SET_PDEATHSIG and its control pipe's end, and ends the tree.
Before the shim, such a daemon (optseq's orphan then) outlived it. Through the real CLI; the lever is held at a
known point (a FIFO) with its daemon and the daemon's worker up."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.state.runners.test_runner import wait_until
from tests.state.runners.test_wiped_daemons import WIPES, alive, kill_left, left, plan  # noqa: F401  (kill_left: a fixture)


def _ours(folder: Path) -> list[int]:
    """Live processes whose command line names the test's folder (the lever, its daemon), and those the daemon
    wrote down (itself, its worker)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            mine = entry.name.isdigit() and str(folder).encode() in (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0] if mine else b"Z"
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            found.append(int(entry.name))
    return sorted(set(found) | {pid for pid in left(folder) if alive(pid)})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
def test_a_sigkilled_run_leaves_neither_its_lever_nor_the_daemon_it_left(tmp_path, cli_env, kill_left):
    folder = tmp_path / "daemons"
    folder.mkdir()
    kill_left(folder)
    meet = tmp_path / "meet"
    os.mkfifo(meet)  # the lever's first pass waits here, its daemon up, until the test opens the other end
    env = {**cli_env, "OPTSEQ_PLAN": str(plan(tmp_path, {"leaky": [sys.executable, str(WIPES), str(folder),
                                                                    "--meet", str(meet)]}))}
    proc = subprocess.Popen([*OPTSEQ, "--run", "leaky"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: len(left(folder)) == 2 or proc.poll() is not None, 300), "the daemon never started"
        assert proc.poll() is None, proc.communicate()
        assert len(_ours(folder)) == 3  # the lever, held, its daemon and the daemon's worker
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not _ours(folder), 120), _ours(folder)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        for pid in _ours(folder):
            os.kill(pid, signal.SIGKILL)
