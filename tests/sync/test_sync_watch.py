"""The nightly watch in a fresh clone (issue 39, point 3): `git clone`, `optseq sync`, `optseq --run watch`,
`optseq sync` re-checks what a teammate adopted, and its eroded verdict reaches the teammate's `status` at their
next sync. A stand-in bench whose gain an environment variable sets (tests/state/test_watch.py's plan)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import OPTSEQ
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


@pytest.mark.slow  # a compare runs the bench at two commits
def test_a_ci_compare_in_a_fresh_clone_lands_in_the_teams_history(tmp_path):
    """The README's CI job as written: checkout, sync, compare, sync; a teammate's next sync has the compare, and
    their working tree, index and refs are as they were."""
    from tests.code_repo import make_repo

    repo = make_repo(tmp_path)
    remote = tmp_path / "remote.git"
    repo.git("init", "--quiet", "--bare", str(remote))
    repo.git("remote", "add", "origin", f"file://{remote}")
    repo.git("push", "--quiet", "origin", "main", "fast")
    before = repo.snapshot()
    ci = tmp_path / "ci"
    repo.git("clone", "--quiet", "--branch", "fast", f"file://{remote}", str(ci))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}

    def optseq(cwd, *args, code=0, **extra):
        proc = subprocess.run([*OPTSEQ, *args], cwd=cwd, env={**env, **extra}, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc

    optseq(ci, "sync", OPTSEQ_WRITER="ci")
    optseq(ci, "compare", "origin/main", "HEAD", "--tolerance", "3%", OPTSEQ_WRITER="ci")
    assert optseq(ci, "sync", OPTSEQ_WRITER="ci").stdout.startswith("pushed 1 segment")
    said = optseq(repo.root, "sync", OPTSEQ_WRITER="laptop").stdout
    assert "fetched 1 writer: ci-" in said, said
    runs = json.loads(optseq(repo.root, "runs", "--json").stdout)["runs"]
    (compare,) = [r for r in runs if r.get("kind") == "compare"]
    assert compare["status"] == "succeeded" and compare["origin"]["writer"].startswith("ci-"), compare
    assert repo.snapshot() == before
