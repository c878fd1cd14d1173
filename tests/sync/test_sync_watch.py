"""The nightly watch in a fresh clone (issue 39, point 3): `git clone`, `optseq sync`, `optseq --run watch`,
`optseq sync` re-checks what a teammate adopted, and its eroded verdict reaches the teammate's `status` at their
next sync. A stand-in bench whose gain an environment variable sets (tests/state/test_watch.py's plan)."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.state.test_watch import PLAN
from tests.sync.syncing import Team, git


@pytest.mark.slow  # lever runs: every arm a process
def test_a_watch_in_a_fresh_clone_rechecks_what_a_adopted_and_a_sees_its_verdict(tmp_path):
    team = Team(tmp_path)
    (team.repo / "sequencing.toml").write_text(PLAN, encoding="utf-8")
    git(team.repo, "commit", "--quiet", "-am", "the watched plan")
    git(team.repo, "push", "--quiet", "origin", "main")
    ran = json.loads(team.optseq("A", "--run", "fast", "--json").stdout)["runs"]
    assert [(r["lever"], r["decision"]) for r in ran] == [("fast", "adopt")], ran
    team.optseq("A", "sync")

    clone = tmp_path / "nightly"
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", f"file://{team.remote}", str(clone)], check=True)
    here = {"OPTSEQ_DB": str(clone / ".optseq"), "OPTSEQ_PLAN": str(clone / "sequencing.toml")}
    team.optseq("ci", "sync", cwd=clone, **here)
    watch = team.optseq("ci", "--run", "watch", "--json", code=6, cwd=clone, GAIN="1.0", **here)
    assert [(r["lever"], r["verdict"]) for r in json.loads(watch.stdout)["runs"]] == [("fast", "eroded")]
    team.optseq("ci", "sync", cwd=clone, **here)

    team.optseq("A", "sync")
    status = json.loads(team.optseq("A", "status", "--json").stdout)
    fast = next(l for l in status["levers"] if l["id"] == "fast")
    assert fast["state"] == "adopted" and "eroded" in json.dumps(fast), fast
    assert "eroded" in team.optseq("A", "status").stdout


@pytest.mark.slow  # lever runs: every arm a process
def test_references_across_three_writers_are_remapped(tmp_path):
    """A measures and adopts; C, having synced A's, decides again citing A's run and superseding A's decision; B
    syncs last and gets both writers' records, C's references pointing at B's copies of A's records."""
    team = Team(tmp_path)
    (team.repo / "sequencing.toml").write_text(PLAN, encoding="utf-8")
    git(team.repo, "commit", "--quiet", "-am", "the watched plan")
    team.optseq("B", "decide", "fast", "defer", "--why", "B's own decision first")  # B's ids differ from A's
    team.optseq("A", "--run", "fast", "--json")
    team.optseq("A", "sync")
    team.optseq("C", "sync")
    team.optseq("C", "decide", "fast", "reject", "--why", "C reverses A's adoption")
    team.optseq("C", "sync")
    team.optseq("B", "sync")
    records = team.records("B")
    wa, wc = team.writer("A"), team.writer("C")
    (run,) = [r for k, r in records.items() if k[0] == "runs" and k[1] == wa]
    (adopted,) = [r for k, r in records.items() if k[0] == "decisions" and k[1] == wa]
    (reversed_,) = [r for k, r in records.items() if k[0] == "decisions" and k[1] == wc]
    assert adopted["id"] != adopted["origin"]["id"] and adopted["runs"] == [run["id"]]
    assert reversed_["supersedes"] == adopted["id"], (reversed_, adopted)
    assert all(r in {run["id"]} for r in reversed_.get("runs") or []), reversed_
    status = json.loads(team.optseq("B", "status", "--json").stdout)
    assert next(l for l in status["levers"] if l["id"] == "fast")["outcome"] == "reject"
    # C had seen A's (a reversal, no conflict with it), not B's, made before B synced: that one is a conflict
    (c,) = status["conflicts"]
    assert (c["holds"]["writer"], c["other"]["writer"]) == (wc, team.writer("B")), c
