"""A run in flight on one machine, synced to another: the other store holds it as running elsewhere, never
recovers it as `interrupted` when it finds no such process of its own, and takes its end when it comes."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.conftest import OPTSEQ
from tests.state.lifecycle.test_watch import PLAN
from tests.state.sync.syncing import Team, git


@pytest.mark.slow  # lever runs: every arm a process
def test_a_run_in_flight_elsewhere_is_never_recovered_here(tmp_path):
    team = Team(tmp_path)
    held = tmp_path / "held"
    held.mkdir()
    os.mkfifo(held / "go")
    bench = str(tmp_path.parent / "x")  # replaced below
    bench = str(__import__("pathlib").Path(__file__).parent / "held_gain.py")
    (team.repo / "sequencing.toml").write_text(PLAN.replace(str(__import__("tests.state.lifecycle.test_watch",
                                               fromlist=["BENCH"]).BENCH), bench), encoding="utf-8")
    git(team.repo, "commit", "--quiet", "-am", "the held plan")
    run = subprocess.Popen([*OPTSEQ, "--run", "fast", "--json"], env=team.env("A", HELD_DIR=str(held)),
                           cwd=team.repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (held / "started").exists():  # an event, not a time budget: the bench's first launch began
            assert run.poll() is None, run.communicate()
            time.sleep(0.02)
        team.optseq("A", "sync")
        team.optseq("B", "sync")
        (rid,) = [r["id"] for r in team.records("B").values() if r.get("lever") == "fast" and "status" in r]
        with open(held / "go", "w") as go:
            go.write("go")
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    # the run's process is gone: B, whose store holds it as running, must not end it as interrupted
    assert "interrupted" not in team.optseq("B", "status").stdout + team.optseq("B", "status").stderr
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    for store in ("A", "B"):
        runs = [r for r in json.loads(team.optseq(store, "runs", "--json").stdout)["runs"] if r.get("lever") == "fast"]
        assert [r["status"] for r in runs] == ["succeeded"], (store, runs)
    assert json.loads(team.optseq("B", "runs", "--json").stdout)["runs"][0]["id"] == rid
