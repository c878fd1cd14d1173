"""The launcher against real child processes: protocol parsing, statuses, timeouts, cancel, and no orphans."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from optseq.state.runners.protocol import MAX_LINE, Transcript, classify, parse_line
from optseq.state.runners.local import Launcher, run
from optseq.state.runners.interface import RunSpec
from optseq.state.runners.groups import group_alive, kill_group
from optseq.state.runners.shim import NO_PIDFD_ENV

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups, pidfd and /proc")

LEVERS = (Path(__file__).parents[1] / "levers")


def lever(name: str, *args: str, tmp_path: Path | None = None, **kw) -> RunSpec:
    log = tmp_path / "runs" / name / "log" if tmp_path is not None else None
    return RunSpec(["python", str(LEVERS / name), *args], log_path=log, **kw)


def dead(pid: int) -> bool:
    """Gone, or a zombie (dead, waiting to be reaped); reaps it when it became our child."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return True
    if state not in (b"Z", b"X"):
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return True


def wait_until(test, within_s: float = 60.0) -> bool:
    """Poll for an event; `within_s` is a ceiling against a hang, not a time budget."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if test():
            return True
        time.sleep(0.02)
    return test()


def assert_group_gone(pgid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert not group_alive(pgid)


# ---- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "", "plain text", "{", '{"event": "done"', '["event", "done"]', '{"no_event": 1}', '{"event": 5}',
    '{"event": null}', "42", '"event"', "{" * 5000, '{"event": "env", "deep": ' + "[" * 100000,
    '{"event": "env", "n": ' + "9" * 10000 + "}", "\ufffd\ufffd not utf-8",
])
def test_anything_that_is_not_an_event_object_is_log(line):
    assert classify(line) == (None, None)
    assert parse_line(line) is None


def test_events_parse_with_their_fields():
    assert parse_line('{"event": "done"}') == {"event": "done"}
    assert parse_line('  {"event": "progress", "done": 2, "total": 10, "msg": "x"}\r\n')["done"] == 2
    assert parse_line(b'{"event": "unavailable", "reason": "no CUDA"}')["reason"] == "no CUDA"
    assert parse_line('{"event": "something-new", "x": 1}') == {"event": "something-new", "x": 1}
    assert parse_line(b'{"event": "env", "name": "caf\xff"}')["name"] == "caf\ufffd"


@pytest.mark.parametrize("line, problem", [
    ('{"event": "sample", "arm": "a", "value": "fast", "pair": 0}', "value must be a finite number"),
    ('{"event": "sample", "arm": "a", "value": NaN, "pair": 0}', "value must be a finite number"),
    ('{"event": "sample", "arm": "a", "value": Infinity, "pair": 0}', "value must be a finite number"),
    ('{"event": "sample", "arm": "a", "value": true, "pair": 0}', "value must be a finite number"),
    ('{"event": "sample", "arm": "a", "value": 1.0, "pair": 1.5}', "pair must be a non-negative integer"),
    ('{"event": "sample", "arm": "a", "value": 1.0, "pair": -1}', "pair must be a non-negative integer"),
    ('{"event": "sample", "arm": 3, "value": 1.0, "pair": 0}', "arm must be a non-empty string"),
    ('{"event": "sample", "value": 1.0, "pair": 0}', "arm is missing"),
    ('{"event": "sample", "arm": "a", "value": 1.0, "pair": 0, "higher_is_better": "yes"}', "higher_is_better"),
    ('{"event": "progress", "done": "1", "total": 2}', "done must be a finite number"),
    ('{"event": "progress", "done": 1}', "total is missing"),
    ('{"event": "quality", "name": "err", "value": null, "limit": 1}', "value must be a number"),
    ('{"event": "criterion", "candidate": "flux", "criterion": "c1", "outcome": "maybe"}', "outcome must be"),
    ('{"event": "unavailable", "reason": 7}', "reason must be a string"),
])
def test_a_malformed_known_event_is_log_with_a_warning(line, problem):
    event, warning = classify(line)
    assert event is None
    assert problem in warning and warning.startswith("malformed")


def test_a_guard_that_measured_nan_stays_an_event_so_it_can_fail():
    event = parse_line('{"event": "quality", "name": "err", "value": NaN, "limit": 0.001}')
    assert event is not None and not event["value"] <= event["limit"]


def test_transcript_splits_chunks_into_lines_and_cuts_runaway_lines(tmp_path):
    seen_events, seen_log = [], []
    with open(tmp_path / "log", "wb") as log:
        t = Transcript(log, seen_events.append, seen_log.append)
        t.feed(b'{"event": "sam')
        t.feed(b'ple", "arm": "b", "value": 1, "pair": 0}\nhello\r\n{"event"')
        t.feed(b': "done"}')
        assert [e["event"] for e in seen_events] == ["sample"]
        t.feed(b"z" * (MAX_LINE + 10))            # no newline yet: cut once it passes MAX_LINE
        t.feed(b'{"event": "done"}\n')           # the rest of that same line: still log
        t.feed(b'{"event": "progress", "done": 1, "total": 1}\n')
        t.finish()
    # '{"event": "done"}' followed by the z's was one unterminated line: log, not an event.
    assert [e["event"] for e in seen_events] == ["sample", "progress"]
    assert not t.done
    assert seen_log[0] == "hello"
    assert seen_log[1].startswith('{"event": "done"}zzz') and seen_log[2] == '{"event": "done"}'
    assert any("longer than" in w for w in t.warnings)
    assert t.lines == 4
    assert (tmp_path / "log").stat().st_size == len(
        b'{"event": "sample", "arm": "b", "value": 1, "pair": 0}\nhello\r\n{"event": "done"}') \
        + MAX_LINE + 10 + len(b'{"event": "done"}\n{"event": "progress", "done": 1, "total": 1}\n')


def test_warnings_are_capped():
    t = Transcript()
    for _ in range(80):
        t.feed(b'{"event": "sample", "arm": "a", "value": "x", "pair": 0}\n')
    assert len(t.warnings) == 51 and t.warnings[-1] == "... and 30 more warnings"


# ---- specs ---------------------------------------------------------------------------------


def test_spec_resolves_python_and_merges_env(monkeypatch):
    monkeypatch.setenv("OPTSEQ_TEST_OUTER", "outer")
    spec = RunSpec(["python", "-c", "pass"], env={"OPTSEQ_RUN_ID": "r1", "OPTSEQ_TEST_OUTER": "inner"})
    assert spec.command() == [sys.executable, "-c", "pass"]
    env = spec.environment()
    assert env["OPTSEQ_RUN_ID"] == "r1" and env["OPTSEQ_TEST_OUTER"] == "inner" and env["PATH"] == os.environ["PATH"]
    assert RunSpec(["python3", "x"]).command() == ["python3", "x"]


@pytest.mark.parametrize("kw, message", [
    ({"argv": []}, "non-empty list"),
    ({"argv": "python x.py"}, "non-empty list"),
    ({"argv": ["python", 3]}, "must be strings"),
    ({"argv": ["x"], "env": {"A": 1}}, "env values must be strings"),
    ({"argv": ["x"], "timeout_s": 0}, "timeout_s"),
    ({"argv": ["x"], "timeout_s": float("nan")}, "timeout_s"),
    ({"argv": ["x"], "grace_s": -1}, "grace_s"),
])
def test_bad_specs_are_refused_with_one_line(kw, message):
    with pytest.raises(ValueError, match=message):
        RunSpec(**kw)


# ---- runs ----------------------------------------------------------------------------------


def test_clean_run_succeeds_with_events_in_order_and_a_full_log(tmp_path):
    events, logs, threads, starts = [], [], set(), []

    def on_event(e):
        threads.add(threading.get_ident())
        events.append(e)

    def on_log(line):
        threads.add(threading.get_ident())
        logs.append(line)

    spec = lever("clean.py", tmp_path=tmp_path, timeout_s=30, env={"OPTSEQ_RUN_ID": "run-7"})
    out = run(spec, on_event, on_log, on_start=lambda pid, pgid: starts.append((pid, pgid)))
    assert out.status == "succeeded" and out.ok and out.exit_code == 0, out.log_tail
    assert starts == [(out.pid, out.pgid)] and out.pid == out.pgid
    assert threads == {threading.get_ident()}
    assert events == out.events
    assert [e["event"] for e in out.events] == [
        "env", "progress", "sample", "sample", "progress", "quality", "criterion", "env", "done"]
    assert [(s["arm"], s["value"], s["pair"]) for s in out.samples] == [("baseline", 10.0, 0), ("candidate", 12.5, 0)]
    assert out.qualities == [{"event": "quality", "name": "max_abs_error", "value": 0.0, "limit": 1e-6}]
    assert out.criteria[0]["outcome"] == "pass"
    assert out.env == {"run_id": "run-7", "device": "cpu0", "cores": 2}
    assert logs == ["starting clean lever", "a note on stderr"]
    assert out.warnings == [] and out.unavailable_reason is None
    log_lines = Path(out.log_path).read_text().splitlines()
    assert log_lines[0] == "starting clean lever" and log_lines[5] == "a note on stderr"
    assert [json.loads(x) for x in log_lines if x.startswith("{")] == out.events
    assert len(log_lines) == 11 and out.log_tail == log_lines
    assert_group_gone(out.pgid)


def test_a_run_in_a_worker_thread_calls_back_in_that_thread():
    # As the TUI will do it: the thread that starts the run lives until it ends, so PDEATHSIG
    # (tied to the forking thread) does not fire early.
    result, threads = {}, set()

    def worker():
        result["out"] = run(lever("clean.py", timeout_s=30), on_event=lambda e: threads.add(threading.get_ident()))
        result["thread"] = threading.get_ident()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(30)
    assert result["out"].status == "succeeded" and threads == {result["thread"]}


def test_a_crash_fails_with_the_traceback_in_the_tail(tmp_path):
    out = run(lever("crash.py", tmp_path=tmp_path, timeout_s=30))
    assert (out.status, out.exit_code, out.detail) == ("failed", 1, "exited 1")
    assert "Traceback (most recent call last):" in out.log_tail
    assert out.log_tail[-1] == "RuntimeError: boom in the lever"
    assert [e["event"] for e in out.events] == ["progress"]


def test_death_by_signal_is_named():
    out = run(lever("crash.py", "signal", timeout_s=30))
    assert (out.status, out.exit_code, out.detail) == ("failed", -signal.SIGKILL, "killed by SIGKILL")


def test_exit_0_without_done_fails():
    out = run(lever("no_done.py", timeout_s=30))
    assert (out.status, out.exit_code, out.detail) == ("failed", 0, "exited 0 without a done event")
    assert len(out.samples) == 1


def test_unavailable_is_its_own_status_with_the_reason():
    out = run(lever("unavailable.py", timeout_s=30))
    assert (out.status, out.unavailable_reason, out.detail) == (
        "unavailable", "no CUDA device", "unavailable: no CUDA device")
    failed = run(lever("unavailable.py", "3", timeout_s=30))
    assert (failed.status, failed.exit_code, failed.unavailable_reason) == ("failed", 3, "no CUDA device")


@pytest.mark.parametrize("code", ["0", "4"])
def test_a_fail_event_is_the_runs_one_line_reason_whatever_the_exit_code(code):
    script = ("import json, sys\n"
              "print(json.dumps({'event': 'fail', 'reason': 'weights file missing: ckpt.pt\\nsecond line'}))\n"
              "print(json.dumps({'event': 'done'}))\n"
              f"sys.exit({code})\n")
    out = run(RunSpec(["python", "-c", script], timeout_s=30))
    assert (out.status, out.exit_code, out.detail) == ("failed", int(code), "weights file missing: ckpt.pt")


# A timeout long enough for a loaded machine to start the lever (and its child) before it fires: the
# tests below need the lever to have said where it is. They check what happened, never how long it took.
STARTUP_S = 5


def no_grace_waited(out) -> bool:
    """The runner notes when a group outlived its grace after SIGTERM: here it must not have."""
    return not any("after SIGTERM: SIGKILL" in line for line in out.log_tail)


def test_timeout_kills_the_lever_and_its_grandchild(tmp_path):
    ready = []
    out = run(lever("hang.py", "grandchild", tmp_path=tmp_path, timeout_s=STARTUP_S, grace_s=30),
              on_event=ready.append)
    assert (out.status, out.detail) == ("timeout", f"timed out after {STARTUP_S} s")
    assert out.exit_code == -signal.SIGTERM
    assert out.duration_s >= STARTUP_S and no_grace_waited(out)  # SIGTERM did it; the 30 s grace never ran out
    grandchild = ready[0]["grandchild"]
    assert isinstance(grandchild, int)
    with pytest.raises(ProcessLookupError):
        os.kill(grandchild, 0)
    assert_group_gone(out.pgid)
    assert f"[optseq] timed out after {STARTUP_S} s: SIGTERM to process group" in Path(out.log_path).read_text()


def test_cancel_from_another_thread():
    launcher = Launcher(lever("hang.py", "grandchild", timeout_s=300, grace_s=30))
    ready = threading.Event()
    grandchild = []

    def on_event(e):
        grandchild.append(e["grandchild"])
        ready.set()

    def canceller():
        ready.wait(120)
        launcher.cancel()

    thread = threading.Thread(target=canceller)
    thread.start()
    out = launcher.run(on_event=on_event)
    thread.join()
    assert (out.status, out.detail) == ("cancelled", "cancelled")
    assert no_grace_waited(out) and out.pid == launcher.pid
    assert any(line.startswith("[optseq] cancelled: SIGTERM") for line in out.log_tail)
    assert dead(grandchild[0])
    assert_group_gone(out.pgid)
    launcher.cancel()  # after the run: harmless
    with pytest.raises(RuntimeError, match="runs once"):
        launcher.run()


def test_cancel_before_start_starts_nothing():
    launcher = Launcher(lever("hang.py", timeout_s=30))
    launcher.cancel()
    out = launcher.run()
    assert (out.status, out.pid, out.exit_code) == ("cancelled", None, None)


def test_a_lever_ignoring_sigterm_is_killed_after_grace():
    launcher = Launcher(lever("ignore_term.py", timeout_s=30, grace_s=1))
    out = launcher.run(on_event=lambda e: launcher.cancel())
    assert (out.status, out.exit_code) == ("cancelled", -signal.SIGKILL)
    assert out.detail == "cancelled; killed 1 s after SIGTERM"
    assert out.duration_s >= 1
    assert out.log_tail[-1].startswith("[optseq] still running 1 s after SIGTERM: SIGKILL")
    assert_group_gone(out.pgid)


def test_without_pidfd_exit_is_polled(monkeypatch, tmp_path):
    monkeypatch.setenv(NO_PIDFD_ENV, "1")  # the launch's shim polls for its lever's exit, as on an old kernel
    out = run(lever("clean.py", tmp_path=tmp_path, timeout_s=30))
    assert out.status == "succeeded" and len(out.events) == 9
    hung = run(lever("hang.py", "grandchild", timeout_s=1, grace_s=30))
    assert hung.status == "timeout" and no_grace_waited(hung)
    assert_group_gone(hung.pgid)


def test_a_child_ignoring_sigterm_dies_with_its_lever_without_waiting_out_the_grace():
    ready = []
    out = run(lever("hang.py", "stubborn", timeout_s=STARTUP_S, grace_s=60), on_event=ready.append)
    assert (out.status, out.detail, out.exit_code) == ("timeout", f"timed out after {STARTUP_S} s", -signal.SIGTERM)
    assert no_grace_waited(out)
    assert not any("left processes" in line for line in out.log_tail)  # stopped, not left behind
    with pytest.raises(ProcessLookupError):
        os.kill(ready[0]["grandchild"], 0)
    assert_group_gone(out.pgid)


def test_leftover_children_are_killed_when_the_lever_exits():
    out = run(lever("leaves_child.py", timeout_s=30))
    assert out.status == "succeeded"
    assert any("left processes running" in line for line in out.log_tail)
    with pytest.raises(ProcessLookupError):
        os.kill(out.env["grandchild"], 0)
    assert_group_gone(out.pgid)


def test_garbage_is_log_and_the_run_still_succeeds(tmp_path):
    logs = []
    out = run(lever("garbage.py", tmp_path=tmp_path, timeout_s=30), on_log=logs.append)
    assert out.status == "succeeded", out.detail
    assert [e["event"] for e in out.events] == ["progress", "sample", "done"]
    assert out.samples[0]["value"] == 2.0 and len(out.events[0]["msg"]) == 1_000_000
    assert logs[:5] == ["plain text", '{"event": "sample", "arm": "baseline", "val', '["event", "done"]',
                        '{"no_event": 1}', '{"event": 5}']
    assert logs[5] == "\ufffd\ufffd not utf-8 \ufffd("
    assert "x" * 1_000_000 in logs
    assert [w.split(":")[0] for w in out.warnings] == ["line 7", "line 8"]
    assert "value must be a finite number, got 'fast'" in out.warnings[0]
    raw = Path(out.log_path).read_bytes()
    assert b"\xff\xfe not utf-8 \xc3\x28\n" in raw and b"x" * 1_000_000 + b"\n" in raw
    assert raw.endswith(b'{"event": "done"}')
    assert max(len(line) for line in out.log_tail) < 3000


def test_stdin_is_closed():
    # Our own stdin becomes a pipe that holds data and never ends: a lever that inherited it
    # would read "inherited" and then block until the timeout.
    r, w = os.pipe()
    os.write(w, b"inherited")
    saved = os.dup(0)
    os.dup2(r, 0)
    try:
        out = run(lever("read_stdin.py", timeout_s=60))  # blocked on stdin, it would time out
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)
    assert out.status == "succeeded" and out.env["stdin"] == ""


def test_a_command_that_cannot_start_fails_cleanly(tmp_path):
    out = run(RunSpec(["optseq-no-such-command-xyz"], log_path=tmp_path / "log"))
    assert out.status == "failed" and out.pid is None
    assert out.detail.startswith("could not start 'optseq-no-such-command-xyz'")
    assert (tmp_path / "log").read_text().startswith("[optseq] could not start")
    missing_cwd = run(RunSpec(["python", "-c", "pass"], cwd=tmp_path / "nowhere"))
    assert missing_cwd.status == "failed" and "could not start" in missing_cwd.detail


def test_a_raising_callback_propagates_and_leaves_no_process():
    launcher = Launcher(lever("hang.py", "grandchild", timeout_s=30))
    seen = []

    def explode(e):
        seen.append(e)
        raise KeyError("callback bug")

    with pytest.raises(KeyError, match="callback bug"):
        launcher.run(on_event=explode)
    assert dead(seen[0]["grandchild"])
    assert_group_gone(launcher.pgid)


@contextlib.contextmanager
def held_launch():
    """parent.py (optseq's stand-in) running hang.py with a grandchild, held: (parent, lever pid, pgid, grandchild)."""
    parent = subprocess.Popen([sys.executable, str(LEVERS / "parent.py"), "grandchild"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pgid = None
    try:
        first = parent.stdout.readline().split()
        second = parent.stdout.readline().split()
        if not (first[:1] == ["lever"] and second[:1] == ["ready"]):
            parent.kill()
            pytest.fail(f"parent said {first} {second}; stderr: {parent.stderr.read()}")
        lever_pid, pgid, grandchild = int(first[1]), int(first[2]), int(second[1])
        assert not dead(lever_pid)
        yield parent, lever_pid, pgid, grandchild
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        parent.stderr.close()
        if pgid is not None:
            kill_group(pgid)


def test_a_sigkilled_parent_takes_its_lever_and_the_levers_children_with_it():
    # the launch's shim gets PR_SET_PDEATHSIG and its control pipe's end: it ends the whole tree
    with held_launch() as (parent, lever_pid, pgid, grandchild):
        parent.kill()
        parent.wait()
        assert wait_until(lambda: dead(lever_pid)), "the shim did not end the lever"
        assert wait_until(lambda: dead(grandchild)), "the shim did not end the lever's child"
        assert wait_until(lambda: not group_alive(pgid))


def test_what_a_sigkilled_shim_leaves_can_be_recovered_by_run_id():
    with held_launch() as (parent, lever_pid, pgid, grandchild):
        shim_pid = int(Path(f"/proc/{lever_pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        assert b"import shim" in Path(f"/proc/{shim_pid}/cmdline").read_bytes()
        os.kill(shim_pid, signal.SIGKILL)  # nothing can end the tree then but the lever's own PDEATHSIG
        assert wait_until(lambda: dead(lever_pid)), "PDEATHSIG did not kill the lever"
        # The death signal is not inherited: the lever's own child is still in the group.
        assert not dead(grandchild), "the grandchild died with the lever"
        assert group_alive(pgid) and group_alive(pgid, run_id="orphan-run")
        # Recovery checks the run id, so a recycled pgid of somebody else's is left alone.
        assert not group_alive(pgid, run_id="another-run") and not kill_group(pgid, run_id="another-run")
        assert not dead(grandchild)
        assert kill_group(pgid, run_id="orphan-run")
        assert wait_until(lambda: not group_alive(pgid))
        assert wait_until(lambda: dead(grandchild))


def test_group_helpers_refuse_pids_that_are_not_run_groups():
    assert not group_alive(None) and not group_alive(0) and not group_alive(1) and not group_alive(True)
    assert not kill_group(0) and not kill_group(-5)
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    dead_pid.wait()
    assert not group_alive(dead_pid.pid) and not kill_group(dead_pid.pid)
