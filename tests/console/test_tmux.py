"""The installed `optseq` binary in a real terminal: tmux at 80×24, keys sent, the screen read with capture-pane."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import tiny_plan

TMUX = shutil.which("tmux")
OPTSEQ_BIN = Path(sys.executable).parent / "optseq"
OPTSEQ = str(OPTSEQ_BIN) if OPTSEQ_BIN.exists() else shutil.which("optseq")
SEED_LEVERS = ("julia_port", "port", "cython_bot", "option_b", "model_size", "amp", "compile", "tensorrt",
               "option_a")

pytestmark = [pytest.mark.skipif(TMUX is None or OPTSEQ is None, reason="needs tmux and the installed optseq"),
              pytest.mark.slow]  # a real terminal
CEILING_S = 120.0
"""How long a wait for the screen may take before the test calls it a hang: only a guard, never a budget."""


class Terminal:
    """One tmux server of our own (its own socket), one 80×24 window running optseq."""

    def __init__(self, command: str, env: dict[str, str]):
        self.socket = f"optseq-test-{uuid.uuid4().hex[:8]}"
        # the pane outlives optseq so its exit status can be read from the screen
        shell = f"{command}; echo OPTSEQ-EXIT=$?; sleep 600"
        args = [TMUX, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "24"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self.started = time.monotonic()
        subprocess.run(args + [shell], check=True, timeout=10)

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=10).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def wait_for(self, text: str, timeout: float = CEILING_S) -> str:
        end = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} not on screen after {timeout:g} s:\n{screen}")
            time.sleep(0.05)

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def open_(plan: Path, db: Path, **extra: str) -> Terminal:
        env = {"TERM": "xterm-256color", "NO_COLOR": "1", "TEXTUAL_ANIMATIONS": "none", **extra}
        cwd = Path(__file__).resolve().parents[2]
        command = f"cd {shlex.quote(str(cwd))} && {shlex.quote(OPTSEQ)} --plan {shlex.quote(str(plan))} " \
                  f"--db {shlex.quote(str(db))}"
        term = Terminal(command, env)
        opened.append(term)
        return term

    yield open_
    for term in opened:
        term.close()


def test_seed_levers_visible_and_quit_exits_cleanly(terminal, db, record_property):
    term = terminal(DEFAULT_PLAN, db)
    screen = term.wait_for("next: nothing to run · to do: julia_port")
    first_paint = time.monotonic() - term.started
    record_property("first_paint_s", round(first_paint, 2))
    print(f"time to first paint (tmux, 80x24, NO_COLOR=1): {first_paint:.2f} s")
    rows = [line.split()[0] for line in screen.splitlines()[1:10]]
    assert rows == list(SEED_LEVERS), screen
    assert "adopted" in screen and "2.55× (plan)" in screen
    term.keys("2")
    screen = term.wait_for("NO-GO → option_b [blocked]")
    assert "julia_port [ready]" in screen and "cython_bot [decided]" in screen
    term.keys("q")
    term.wait_for("OPTSEQ-EXIT=0")


def test_a_run_streams_and_finishes(terminal, tmp_path, db):
    plan = tiny_plan(tmp_path)
    release = tmp_path / "release"
    term = terminal(plan, db, TINY_LEVER_HOLD=str(release))  # the lever waits after each pair for `release`
    term.wait_for("next: fast")
    term.keys("Down", "r")  # the slow lever, held after its first pair
    mid = term.wait_for("pair 1")
    assert "running: slow" in mid and "tiny lever log line 2" in mid and "/6 pair" in mid
    release.touch()
    term.wait_for("run #1 succeeded")
    done = term.wait_for("slow        Slow lever        adopted")  # the table catches up a frame later
    assert "samples: 12 (6 pairs)" in done and "estimate: items_per_s 1.5" in done
    term.keys("q")
    term.wait_for("OPTSEQ-EXIT=0")
    with Sequencer.open(plan, db, mode="read") as seq:
        (run,) = seq.history("slow")["runs"]
    assert run["status"] == "succeeded" and run["n_samples"] == 12
