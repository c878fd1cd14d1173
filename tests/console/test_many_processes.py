"""One store, many processes: a pager holding a read, writes beside it, two levers running from two shells."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ
from tests.console.test_app import tiny_plan

CEILING_S = 600
"""Only against a hang: every wait below is for an event."""


def cli(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=CEILING_S)


def test_a_pager_holding_runs_json_blocks_neither_record_nor_run(tmp_path, cli_env, db):
    plan = tiny_plan(tmp_path)
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    with Sequencer.open(plan, db, mode="write") as seq, seq.store.batch():
        for i in range(400):  # enough history that `runs --json` fills the pipe and waits for its reader
            seq.store.append("events", {"type": "note", "text": "x" * 400, "i": i})
    # unbuffered: a buffered first read takes more than it returns, and communicate() reads the pipe past it
    pager = subprocess.Popen([*OPTSEQ, "runs", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             bufsize=0)
    try:
        first = pager.stdout.read(1024)  # it has started writing; nobody reads the rest for now
        assert first.startswith(b"{")
        assert pager.poll() is None  # blocked on the full pipe, like `optseq runs --json | less`
        fact = cli(env, "fact", "ghost", "true")
        assert fact.returncode == 2 and "unknown fact" in fact.stderr  # a refusal, not a wait for the pager
        ran = cli(env, "--run", "fast", "--json")
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout)["runs"][0]["decision"] == "adopt"
        assert pager.poll() is None
    finally:
        rest, _ = pager.communicate(timeout=CEILING_S)
    assert pager.returncode == 0 and json.loads(first + rest)["events"]


def test_two_levers_run_from_two_processes_and_one_lever_runs_once(tmp_path, cli_env, db):
    plan = tiny_plan(tmp_path)
    release = tmp_path / "release"
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    held = dict(env, TINY_LEVER_HOLD=str(release))  # the first shell's lever waits after each pair
    first = subprocess.Popen([*OPTSEQ, "--run", "slow"], env=held, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        seen = []
        for line in first.stderr:  # its progress lines: the run is under way once its first pair is in
            seen.append(line)
            if line.rstrip("\n") == "slow: pair 1 of 12":  # cumulative over the run's first look
                break
        else:  # its stderr ended without that line: the run never got under way as this test needs
            raise AssertionError(f"no first-pair progress line from the held run: {seen!r}")
        assert seen[0] == ("slow: starting run (6 launches of up to 2 pairs before it can decide: its 12-pair budget, "
                           "all at the first look)\n"), seen
        again = cli(env, "--run", "slow")
        assert again.returncode == 3 and f"slow is running in optseq pid {first.pid}" in again.stderr
        other = cli(env, "--run", "fast", "--json")  # a second lever, from a second shell, at the same time
        assert other.returncode == 0, other.stderr
        assert json.loads(other.stdout)["runs"][0]["decision"] == "adopt"
        release.touch()
        _, err = first.communicate(timeout=CEILING_S)
        assert first.returncode == 0, err
    finally:
        release.touch()
        first.kill()
    with Sequencer.open(plan, db, mode="read") as seq:
        runs = {r["lever"]: r for r in seq.views.history()["runs"]}
        assert runs["slow"]["status"] == runs["fast"]["status"] == "succeeded"
        assert {l.id: l.state for l in seq.views.status().levers}["slow"] == "adopted"
