"""What `optseq init` gives a new user (issue 32, point 5): the starter written the way the README teaches
([workload] + candidate_args), `.optseq/` kept out of git, and a first `--run ready` that decides on a busy
machine, as the README says it does.

Every command is the real `optseq` in a folder outside the repository, as a new user's shell would run it.
Timeouts are hang guards only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.plan.loader import load
from tests.conftest import OPTSEQ, ROOT

STARTER = ROOT / "configs" / "starter"
HANG_GUARD_S = 300
BUSY_LOOPS = 2
"""Spinning processes beside the run: as many as this project's CI machine has cores, so every core is shared."""


@pytest.fixture
def env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_PLAN", "OPTSEQ_DB", "OPTSEQ_PUREPYTHON")}


def optseq(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          timeout=HANG_GUARD_S).stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q", ".")
    return tmp_path


def test_the_starter_is_a_workload_and_levers_that_change_its_flags():
    plan = load(STARTER / "optseq.toml")
    assert plan.workload is not None
    assert plan.workload.command[:2] == ("python", "optseq_bench.py")
    pairs = [lever for lever in plan.levers if lever.arms is not None]
    assert [lever.id for lever in pairs] == ["fast_sum", "no_copy"]
    for lever in pairs:
        assert lever.arms.candidate_args, lever.id  # a change of the workload's command
        assert not lever.arms.candidate_env and not lever.arms.baseline_env, lever.id
    text = (STARTER / "optseq.toml").read_text(encoding="utf-8")
    assert "candidate_env =" not in text.replace("# an environment toggle is a change too: candidate_env =", "")


def test_init_in_a_git_repo_keeps_the_state_out_of_git(env, repo):
    out = ok(optseq(env, repo, "init"))
    assert "added .optseq/ to .gitignore" in out
    assert (repo / ".gitignore").read_text(encoding="utf-8") == ".optseq/\n"
    ok(optseq(env, repo, "status"))  # writes ./.optseq
    assert (repo / ".optseq").is_dir()
    untracked = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(untracked) == ["?? .gitignore", "?? optseq.toml", "?? optseq_bench.py"]

    out = ok(optseq(env, repo, "init", "--force"))  # again: the line is there, not added twice
    assert ".gitignore" not in out
    assert (repo / ".gitignore").read_text(encoding="utf-8") == ".optseq/\n"


def test_init_appends_to_an_existing_gitignore_once(env, repo):
    (repo / ".gitignore").write_bytes(b"build/\n*.pyc")  # the user's lines, the last without its newline
    ok(optseq(env, repo, "init"))
    assert (repo / ".gitignore").read_bytes() == b"build/\n*.pyc\n.optseq/\n"


@pytest.mark.parametrize("line", [".optseq", "/.optseq/", "  .optseq/  "])
def test_init_leaves_a_gitignore_that_already_ignores_the_state(env, repo, line):
    (repo / ".gitignore").write_text(f"{line}\n", encoding="utf-8")
    assert ".gitignore" not in ok(optseq(env, repo, "init"))
    assert (repo / ".gitignore").read_text(encoding="utf-8") == f"{line}\n"


def test_init_in_a_subfolder_of_a_repo_ignores_the_state_there(env, repo):
    out = ok(optseq(env, repo, "init", "perf"))
    assert "added .optseq/ to perf/.gitignore" in out
    assert (repo / "perf" / ".gitignore").read_text(encoding="utf-8") == ".optseq/\n"
    assert not (repo / ".gitignore").exists()


def test_init_outside_git_writes_no_gitignore(env, tmp_path):
    out = ok(optseq(env, tmp_path, "init"))
    assert ".gitignore" not in out
    assert not (tmp_path / ".gitignore").exists()


def test_the_starters_first_run_decides_beside_busy_loops(env, tmp_path):
    """The README's promise, `optseq --run ready` "measures the starter's ready lever and decides it", held on a
    machine whose every core is shared with a spinning process (at load 4 the old starter ended inconclusive)."""
    ok(optseq(env, tmp_path, "init"))
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_LOOPS)]
    try:
        report = json.loads(ok(optseq(env, tmp_path, "--run", "ready", "--json")))
    finally:
        for proc in spin:
            proc.kill()
            proc.wait()
    [run] = report["runs"]
    assert run["lever"] == "fast_sum" and run["status"] == "succeeded"
    assert run["verdict"] == "adopt", run
