"""A branch lever's checkout or setup that fails is a failed run, through the CLI on a real repository
(tests/code_repo.py): `--run LEVER` exits 1 and `--run ready` too beside a lever that ran well, `compare` exits 4
(the run failed), each recorded `failed` with the cause as its line in `runs`, `status` and `runs --json`.
A ref that names no commit stays bad input (exit 2, nothing recorded: test_branch_levers.py)."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.code_repo import CodeRepo, make_repo
from tests.state.code.test_branch_levers import cli

LEVERS = '''
[[levers]]
id = "flag"
title = "a flag, no branch: runs in the working tree"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }
[levers.arms]
candidate_env = { FLAG = "1" }

[[levers]]
id = "refused"
title = "a commit git will not check out"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }
[levers.arms]
candidate_ref = "refused"
'''


def refused_commit(repo: CodeRepo) -> str:
    """A branch `refused` on main whose tree holds a path git refuses to write (`.GIT`, which core.protectNTFS,
    on by default, keeps out of every checkout): made from plumbing, as a hostile or foreign history brings it."""
    def plumbing(*args: str, given: str) -> str:
        return subprocess.run(["git", *args], cwd=repo.root, input=given, text=True, capture_output=True,
                              check=True).stdout.strip()

    blob = plumbing("hash-object", "-w", "--stdin", given="x\n")
    tree = plumbing("mktree", given=repo.git("ls-tree", "main") + f"\n100644 blob {blob}\t.GIT\n")
    commit = repo.git("commit-tree", tree, "-p", "main", "-m", "a path git refuses")
    repo.git("branch", "refused", commit)
    return commit


CASES = {
    # what fails: (the lever, what the environment adds, the workload's extra lines, words of the cause)
    "setup": ("fast", {}, 'setup = ["sh", "-c", "exit 1"]\n', "failed: `sh -c exit 1` exited 1"),
    "cache": ("fast", {"OPTSEQ_WORKTREES": "FILE"}, "", "into optseq's worktrees"),
    "commit": ("refused", {}, "", "cannot check out refused ("),
}


@pytest.mark.slow  # lever runs launch every arm as a process
@pytest.mark.parametrize("case", CASES)
def test_a_checkout_or_setup_that_fails_is_a_failed_run_recorded_with_its_cause(tmp_path, case):
    lever, env, workload, cause = CASES[case]
    repo = make_repo(tmp_path, workload_extra=workload, levers_extra=LEVERS)
    refused_commit(repo)
    if env.get("OPTSEQ_WORKTREES") == "FILE":  # the worktree cache is a regular file: no checkout can be made
        (tmp_path / "cache-file").write_text("not a folder\n", encoding="utf-8")
        env = {"OPTSEQ_WORKTREES": str(tmp_path / "cache-file")}
    db = tmp_path / "db"

    ran = cli(repo, db, "--run", lever, "--json", code=1, env=env)
    (report,) = json.loads(ran.stdout)["runs"]
    assert report["status"] == "failed" and cause in report["message"], report
    (record,) = json.loads(cli(repo, db, "runs", "--json").stdout)["runs"]
    assert record["status"] == "failed" and cause in record["detail"] and record["ended"], record
    line = next(l for l in cli(repo, db, "runs").stdout.splitlines() if l.lstrip().startswith("1 "))
    assert "failed" in line and cause in line, line
    said = next(v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"] if v["id"] == lever)
    assert said["note"].startswith("last run 1 failed: ") and cause in said["note"], said
    assert said["note"][:60] in cli(repo, db, "status").stdout

    # beside a lever that ran well, --run ready still says a run failed
    ready = cli(repo, db, "--run", "ready", "--json", code=1, env=env)
    runs = {r["lever"]: r for r in json.loads(ready.stdout)["runs"]}
    assert runs[lever]["status"] == "failed" and cause in runs[lever]["message"], runs
    assert runs["flag"]["status"] == "succeeded", runs

    compared = cli(repo, db, "compare", "main", "refused" if lever == "refused" else "fast", "--json", code=1,
                   env=env)
    verdict = json.loads(compared.stdout)
    assert verdict["status"] == "failed" and verdict["verdict"] == "failed" and cause in verdict["reason"], verdict
    record = json.loads(cli(repo, db, "runs", "--json").stdout)["runs"][-1]
    assert record["kind"] == "compare" and record["status"] == "failed" and cause in record["detail"], record
