"""A launch's shim (state/runners/shim.py) on its own, through optseq's end of it (shim_link.py): real processes
held at known points by a stand-in lever (tree.py), FIFOs and files for events, never a clock."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from optseq.state.runners import shim
from optseq.state.runners.interface import RunSpec
from optseq.state.runners.shim_link import ShimLink
from tests.state.runners.test_runner import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc")

HERE = Path(__file__).parent
TREE = HERE / "tree.py"


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """Where the stand-in writes its pids; whatever a failing test leaves running is ended after it."""
    yield tmp_path
    for role in tmp_path.rglob("*"):
        pid = role.read_text() if role.is_file() else ""
        if pid.isdigit() and alive(int(pid), tmp_path):
            os.kill(int(pid), signal.SIGKILL)


def launch(folder: Path, *args: str) -> ShimLink:
    return ShimLink.start(RunSpec(["python", str(TREE), str(folder), *args], grace_s=30))


def ended(link: ShimLink) -> list[str]:
    """The kinds of the launch's reports, in order, once its shim has ended it; the shim reaped."""
    try:
        return link.read_all()
    finally:
        link.close()


def pid_of(folder: Path, role: str) -> int:
    assert wait_until(lambda: (folder / role).exists()), f"the stand-in never wrote {role}"  # a hang guard
    return int((folder / role).read_text())


def stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1])


def alive(pid: int, folder: Path) -> bool:
    """Running (a zombie is dead), and still the stand-in's: its command line names the test's folder."""
    try:
        mine = str(folder).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    here = stat(pid)
    return mine and here is not None and here[0] not in ("Z", "X")


def release(fifo: Path) -> None:
    with open(fifo, "w"):  # returns once the stand-in waits at the other end
        pass


def test_a_grandchild_orphaned_by_its_parent_comes_back_to_its_launchs_shim_and_is_reaped_there(folder):
    for fifo in ("go", "hold"):
        os.mkfifo(folder / fifo)
    link = launch(folder, "orphan")
    try:
        grandchild = pid_of(folder, "grandchild")
        # its parent exited: the shim, its launch's subreaper, is its parent now (not init, not optseq)
        assert wait_until(lambda: (stat(grandchild) or ("", 0))[1] == link.proc.pid), stat(grandchild)
        release(folder / "go")
        # dead, and reaped by the shim while the lever still runs: not left a zombie until the launch ends
        assert wait_until(lambda: stat(grandchild) is None), stat(grandchild)
        assert link.proc.poll() is None and link.code is None
        release(folder / "hold")
    finally:
        reports = ended(link)
    assert reports[1:] == ["exit", "swept"] and (link.code, link.left) == (0, []), reports
    assert link.proc.returncode == 0


def test_what_a_lever_leaves_is_its_own_launchs_stopped_reaped_and_reported(folder):
    """Two launches at once, each leaving a process in its group and a daemon outside it: each shim reports its
    own, and only its own."""
    first, second = folder / "first", folder / "second"
    first.mkdir()
    second.mkdir()
    held = launch(first, "hold")  # its lever runs on while the second launch ends
    try:
        pid_of(first, "lead")  # its daemon and child are up
        held_daemon = pid_of(first, "daemon")
        link = launch(second, "leave")
        reports = ended(link)
        lead, child, daemon = (pid_of(second, role) for role in ("lead", "child", "daemon"))
        assert reports == ["start", "exit", "group", "left", "swept"], reports
        assert (link.pid, link.code, link.group) == (lead, 0, 1)  # the child in its group, SIGKILLed
        assert [(pid, str(TREE) in cmd) for pid, cmd in link.left] == [(daemon, True)] and link.stuck == []
        assert not any(alive(pid, second) for pid in (lead, child, daemon))
        assert alive(held_daemon, first)  # the other launch's: none of this one's
        held.ask(shim.TERM)
    finally:
        held_reports = ended(held)
    assert held_reports == ["start", "exit", "left", "swept"] and held.code == -signal.SIGTERM, held_reports
    assert [pid for pid, _ in held.left] == [held_daemon]  # asked to stop: its group's child is no leftover
    assert not any(alive(pid_of(first, role), first) for role in ("lead", "child", "daemon"))


@pytest.mark.parametrize("args, code", [(("exit", "0"), 0), (("exit", "3"), 3), (("signal", "15"), -15),
                                         (("signal", "9"), -9)], ids=["0", "3", "SIGTERM", "SIGKILL"])
def test_the_shims_exit_status_is_the_levers(folder, args, code):
    link = launch(folder, *args)
    assert "exit" in ended(link) and link.code == code
    assert link.proc.returncode == code


def test_a_lever_that_cannot_start_is_said_as_subprocess_says_it(tmp_path):
    link = ShimLink.start(RunSpec(["optseq-no-such-command-xyz", "x"]))
    assert ended(link) == ["error"]
    assert link.error == "[Errno 2] No such file or directory: 'optseq-no-such-command-xyz'" and link.pid is None


def test_the_lever_gets_its_arguments_whole(folder):
    # through the control pipe, whatever they hold, and more than its buffer holds at once
    args = ["a b", "", "two\nlines", "caf\u00e9", "-", *[str(i) * 1000 for i in range(100)]]
    assert ended(launch(folder, "says", *args)) == ["start", "exit", "swept"]
    assert json.loads((folder / "argv").read_text()) == args


IGNORED = ["sh", "-c", 'grep SigIgn /proc/$$/status > "$1"', "sh"]
"""A lever that is no Python (which ignores SIGPIPE for itself): writes the signals it ignores to $1."""


def test_the_lever_ignores_the_signals_a_bare_launch_would(folder):
    """Those its parent ignored still ignored (`nohup optseq …`), those Python ignores for itself (SIGPIPE, in
    the shim) back at their defaults: as Popen gives them."""
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        subprocess.run([*IGNORED, str(folder / "bare")], check=True)
        link = ShimLink.start(RunSpec([*IGNORED, str(folder / "shimmed")]))
        assert ended(link) == ["start", "exit", "swept"] and link.code == 0
    finally:
        signal.signal(signal.SIGHUP, old)
    ignored = int((folder / "shimmed").read_text().split()[1], 16)
    assert ignored == int((folder / "bare").read_text().split()[1], 16)
    assert ignored & 1 << (signal.SIGHUP - 1) and not ignored & 1 << (signal.SIGPIPE - 1)


@pytest.mark.parametrize("how", ["signal", "request"])
def test_a_signal_to_the_shim_or_a_request_reaches_the_levers_group(folder, how):
    link = launch(folder, "wait")
    try:
        pid_of(folder, "lead")  # past the shim's start: its handlers are in place
        if how == "signal":
            os.kill(link.proc.pid, signal.SIGTERM)
        else:
            link.ask(shim.TERM)
    finally:
        reports = ended(link)
    assert "exit" in reports and link.code == -signal.SIGTERM, reports
    assert link.proc.returncode == -signal.SIGTERM


def test_a_launch_given_up_is_ended_at_once_with_what_it_left(folder):
    # what optseq does when a callback raises or Ctrl-C lands: its end of the control pipe closes
    link = launch(folder, "hold")
    try:
        lead, child, daemon = (pid_of(folder, role) for role in ("lead", "child", "daemon"))
        link.give_up()
    finally:
        reports = ended(link)
    assert reports == ["start", "left", "swept"], reports  # no exit of its own: nobody waited for it
    assert [pid for pid, _ in link.left] == [daemon]
    assert link.proc.returncode == -signal.SIGKILL  # the lead's: the group was SIGKILLed
    assert not any(alive(pid, folder) for pid in (lead, child, daemon))


def test_the_shim_dies_with_its_parent_and_takes_the_tree_with_it(folder):
    parent = subprocess.Popen([sys.executable, str(HERE / "parent_of_shim.py"), str(folder)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        said = parent.stdout.readline().split()
        assert said[:1] == ["shim"], said
        shim_pid = int(said[1])
        lead, child, daemon = (pid_of(folder, role) for role in ("lead", "child", "daemon"))
        assert wait_until(lambda: (stat(daemon) or ("", 0))[1] == shim_pid)  # its parent exited: it came back
        parent.kill()
        parent.wait()
        assert wait_until(lambda: stat(shim_pid) is None or stat(shim_pid)[0] == "Z"), "the shim outlived optseq"
        assert not any(alive(pid, folder) for pid in (lead, child, daemon))
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
