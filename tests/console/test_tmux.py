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
    """One tmux server of our own (its own socket), one window (80×24 unless told) running optseq."""

    def __init__(self, command: str, env: dict[str, str], size: tuple[int, int] = (80, 24)):
        self.socket = f"optseq-test-{uuid.uuid4().hex[:8]}"
        # the pane outlives optseq so its exit status can be read from the screen
        # a tmux server started without a terminal hands its panes COLUMNS=80 LINES=24, which Textual (through
        # shutil.get_terminal_size) prefers to the pane's real size: drop them so the pane's size rules
        shell = f"unset COLUMNS LINES; {command}; echo OPTSEQ-EXIT=$?; sleep 600"
        args = [TMUX, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", str(size[0]), "-y", str(size[1])]
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

    def wait_for(self, text, timeout: float = CEILING_S) -> str:
        """The screen once `text` is on it (or once `text(screen)` is true)."""
        seen = text if callable(text) else (lambda screen: text in screen)
        end = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if seen(screen):
                return screen
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} not on screen after {timeout:g} s:\n{screen}")
            time.sleep(0.05)

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def open_(plan: Path, db: Path, size: tuple[int, int] = (80, 24), **extra: str) -> Terminal:
        env = {"TERM": "xterm-256color", "NO_COLOR": "1", "TEXTUAL_ANIMATIONS": "none", **extra}
        cwd = Path(__file__).resolve().parents[2]
        command = f"cd {shlex.quote(str(cwd))} && {shlex.quote(OPTSEQ)} --plan {shlex.quote(str(plan))} " \
                  f"--db {shlex.quote(str(db))}"
        term = Terminal(command, env, size)
        opened.append(term)
        return term

    yield open_
    for term in opened:
        term.close()


def test_seed_levers_visible_and_quit_exits_cleanly(terminal, db, record_property):
    term = terminal(DEFAULT_PLAN, db)
    screen = term.wait_for("next: nothing to run · press c on julia_port")
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
    term.wait_for("next: fast (n runs it)")
    term.keys("Down", "r")  # the slow lever, held after its first pair
    # progress counts over the whole pair budget (12), not one launch of 2
    mid = term.wait_for("pair 1 of 12")
    assert "running: slow" in mid and "tiny lever log line 2" in mid, mid
    release.touch()
    term.wait_for("run #1 succeeded")
    done = term.wait_for(lambda screen: any(line.split()[:2] == ["slow", "adopted"]  # a frame after the run
                                            for line in screen.splitlines()))
    # 6 launches (the fewest that can decide) of 2 pairs each (max_repeats 12 // 6)
    assert "samples: 24 (12 pairs)" in done and "estimate: items_per_s 1.5" in done
    term.keys("q")
    term.wait_for("OPTSEQ-EXIT=0")
    with Sequencer.open(plan, db, mode="read") as seq:
        (run,) = seq.views.history("slow")["runs"]
    assert run["status"] == "succeeded" and run["n_samples"] == 24 and run["passes"] == 6


def _row(screen: str, lever: str) -> str:
    return next(line for line in screen.splitlines() if line.split()[:1] == [lever])


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_keys_and_the_next_step_are_on_screen(terminal, db, size, record_property):
    term = terminal(DEFAULT_PLAN, db, size=size)
    term.wait_for("press c on julia_port")
    first_paint = time.monotonic() - term.started
    record_property("first_paint_s", round(first_paint, 2))
    print(f"time to first paint (tmux, {size[0]}x{size[1]}, NO_COLOR=1): {first_paint:.2f} s")
    screen = term.wait_for(lambda screen: "palette" in screen.splitlines()[-1])  # the footer draws a frame later
    footer = screen.splitlines()[-1]
    assert "? Help" in footer and "q Quit" in footer and "^p palette" in footer, footer
    assert "c on julia_port" in _row(screen, "option_b")  # the why / next column names the key
    if size[0] >= 160:  # the graph stands beside the table, no tab pressed (its pane drawn a frame after the keys)
        screen = term.wait_for("NO-GO → option_b [blocked]")
        footer = screen.splitlines()[-1]
        assert "d Decide" in footer and "p Plan" in footer
    else:
        assert "NO-GO → option_b" not in screen
    Path(f"/tmp/screens_{size[0]}x{size[1]}.txt").write_text(
        f"optseq at {size[0]}x{size[1]} (tmux capture-pane, NO_COLOR=1), first paint {first_paint:.2f} s\n\n"
        + screen, encoding="utf-8")
    term.keys("q")
    term.wait_for("OPTSEQ-EXIT=0")
