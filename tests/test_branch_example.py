"""The branch levers example (configs/examples/branch/): its repository is built by its own script, its faster branch
is adopted and waits for its merge, and the commit gate tells the two commits apart, on real timings."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.code_repo import CodeRepo
from tests.conftest import OPTSEQ, ROOT

EXAMPLE = ROOT / "configs" / "examples" / "branch"


def optseq(repo, *args, code=0):
    # the user's own environment, as in the README: the plan and store found from the repository's folder
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_") or k == "OPTSEQ_WORKTREES"}
    proc = subprocess.run([*OPTSEQ, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert code is None or proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_the_example_builds_its_repository_and_its_plan_validates(tmp_path):
    made = subprocess.run([sys.executable, str(EXAMPLE / "make_repo.py"), str(tmp_path / "demo")], capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    repo = CodeRepo(tmp_path / "demo")
    assert repo.git("branch", "--format=%(refname:short)").split() == ["builtin-sum", "main", "tidy"]
    assert optseq(repo.root, "validate").stdout.startswith("optseq.toml: ok (2 levers")
    again = subprocess.run([sys.executable, str(EXAMPLE / "make_repo.py"), str(tmp_path / "demo")], capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 2 and "exists" in again.stderr  # never over a folder that is there


@pytest.mark.slow  # real timings of a real bench, every arm its own process
def test_the_faster_branch_is_adopted_and_compare_says_which_commit_is_slower(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLE / "make_repo.py"), str(tmp_path / "demo")], check=True,
                   capture_output=True, timeout=120)
    repo = CodeRepo(tmp_path / "demo")
    before = repo.snapshot()
    ran = json.loads(optseq(repo.root, "--run", "builtin_sum", "--json").stdout)["runs"][0]
    assert ran["decision"] == "adopt", ran
    status = json.loads(optseq(repo.root, "status", "--json").stdout)
    fast = repo.commit("builtin-sum")
    assert next(v for v in status["levers"] if v["id"] == "builtin_sum")["note"] == \
        f"adopted — merge builtin-sum ({fast[:7]}) to put it in the stack"
    slower = json.loads(optseq(repo.root, "compare", "builtin-sum", "main", "--json", code=7).stdout)
    assert slower["verdict"] == "slower" and slower["tolerance"] == 0.05  # the plan's [compare] tolerance
    assert repo.snapshot() == before
