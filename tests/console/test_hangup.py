"""The console in a real terminal that goes away (an SSH connection dropped, a tmux session killed): it ends, and
a run under way ends with it and says so, instead of a console polling a dead terminal at full speed."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from optseq.state.sequencer import Sequencer
from tests.console.test_app import tiny_plan
from tests.console.test_tmux import CEILING_S, SEED_LEVERS, terminal  # noqa: F401  (the fixture)
from tests.conftest import DEFAULT_PLAN

pytestmark = pytest.mark.slow  # a real terminal


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _processes(match) -> list[int]:
    """Live (not zombie) processes whose argument vector `match(argv)` accepts."""
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and match(_argv(int(e.name))) and _state(int(e.name)) != "Z"]


def _console(db: Path) -> int:
    """optseq's own process, not the tmux server or the pane's shell that hold its command line as one string."""
    (pid,) = _processes(lambda argv: str(db) in argv and any(a.endswith("optseq") for a in argv[:2]))
    return pid


def _gone(pids: list[int]) -> None:
    end = time.monotonic() + CEILING_S  # a guard against a hang, never a budget
    while any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in pids):
        assert time.monotonic() < end, f"still running {CEILING_S:g} s after the terminal went away: {pids}"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_an_idle_console_ends_with_its_terminal(terminal, db):
    # the shell in the pane is the session leader: only it gets SIGHUP, as under `make` or a script
    term = terminal(DEFAULT_PLAN, db)
    term.wait_for("press c on julia_port")
    console = _console(db)
    term.close()
    _gone([console])
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:  # the writer's lock went with it
        assert not seq.readonly


def test_a_run_under_way_ends_cancelled_with_the_terminal(terminal, tmp_path, db):
    plan = tiny_plan(tmp_path)
    term = terminal(plan, db, TINY_LEVER_HOLD=str(tmp_path / "never"))  # the lever waits after its first pair
    term.wait_for("next: fast (n runs it)")
    term.keys("Down", "r")
    term.wait_for("pair 1 of 12")
    console, lever = _console(db), _processes(lambda argv: any(a.endswith("tiny_lever.py") for a in argv))
    assert lever, "the lever's process is not running"
    term.close()
    _gone([console, *lever])
    with Sequencer.open(plan, db, mode="read") as seq:
        (run,) = seq.views.history("slow")["runs"]
    assert run["status"] == "cancelled", run
