"""The nightly watch in a fresh clone (issue 39, point 3): `git clone`, `optseq sync`, `optseq --run watch`,
`optseq sync` re-checks what a teammate adopted, and its eroded verdict reaches the teammate's `status` at their
next sync. A stand-in bench whose gain an environment variable sets (tests/state/lifecycle/test_watch.py's plan)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.state.lifecycle.test_watch import PLAN
from tests.state.sync.syncing import Team, git


NIGHTLY = next(line for line in (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8").splitlines()
               if line.startswith('git clone -q "$REPO" repo && cd repo && optseq sync'))
"""The README's nightly job in a fresh clone, the line as written there."""


@pytest.mark.slow  # lever runs: every arm a process
def test_a_watch_in_a_fresh_clone_rechecks_what_a_adopted_and_a_sees_its_verdict(tmp_path):
    """The README's nightly line run as written by a shell, in an empty folder, against the bare remote: it exits
    with the watch's code (6: eroded) after its second sync has pushed the verdict."""
    team = Team(tmp_path)
    (team.repo / "optseq.toml").write_text(PLAN, encoding="utf-8")  # where a fresh clone's optseq finds it
    git(team.repo, "add", "optseq.toml")
    git(team.repo, "commit", "--quiet", "-m", "the watched plan")
    git(team.repo, "push", "--quiet", "origin", "main")
    git(team.remote, "symbolic-ref", "HEAD", "refs/heads/main")  # what a clone checks out, as a hosted default branch
    plan = {"OPTSEQ_PLAN": str(team.repo / "optseq.toml")}
    ran = json.loads(team.optseq("A", "--run", "fast", "--json", **plan).stdout)["runs"]
    assert [(r["lever"], r["decision"]) for r in ran] == [("fast", "adopt")], ran
    team.optseq("A", "sync", **plan)

    nightly = tmp_path / "nightly"
    nightly.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}
    env.update(REPO=f"file://{team.remote}", GAIN="1.0", OPTSEQ_WRITER="nightly",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    proc = subprocess.run(["bash", "-c", NIGHTLY], cwd=nightly, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 6, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    assert "eroded" in proc.stdout and "pushed 1 segment" in proc.stdout.splitlines()[-1], proc.stdout[-3000:]

    team.optseq("A", "sync", **plan)
    status = json.loads(team.optseq("A", "status", "--json", **plan).stdout)
    fast = next(l for l in status["levers"] if l["id"] == "fast")
    assert fast["state"] == "adopted" and "eroded" in json.dumps(fast), fast
    assert "eroded" in team.optseq("A", "status", **plan).stdout


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

    steps = ci_steps()
    assert [step.split()[:2] for step in steps] == [["optseq", "sync"], ["optseq", "compare"], ["optseq", "sync"]]
    shell = {**env, "OPTSEQ_WRITER": "ci", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    for step in steps:  # each `run:` of the README's job as written, the PR's base branch being main
        step = step.replace("${{ github.base_ref }}", "main")
        proc = subprocess.run(["bash", "-c", step], cwd=ci, env=shell, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (step, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.stdout.startswith("pushed 1 segment"), proc.stdout
    said = optseq(repo.root, "sync", OPTSEQ_WRITER="laptop").stdout
    assert "fetched 1 writer: ci-" in said, said
    runs = json.loads(optseq(repo.root, "runs", "--json").stdout)["runs"]
    (compare,) = [r for r in runs if r.get("kind") == "compare"]
    assert compare["status"] == "succeeded" and compare["origin"]["writer"].startswith("ci-"), compare
    assert repo.snapshot() == before


def ci_steps() -> list[str]:
    """The README's CI job's `run:` steps after optseq is installed, without their comments."""
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    job = readme[readme.index("name: perf gate"):]
    job = job[:job.index("```")]
    steps = [line.split("run:", 1)[1].split("  #", 1)[0].strip() for line in job.splitlines() if "run:" in line]
    return [step for step in steps if not step.startswith("pip install")]
