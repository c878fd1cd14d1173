"""The user's repository after optseq has read it (issue 38, point 5): `status` and a command-pair lever's `--run`
in a working tree mid-work leave its .git/index byte for byte and its files as they were. What makes git rewrite
an index is a tracked file whose stat changed but not its content (a touch, an editor's save, a checkout): porcelain
`git diff` refreshes that entry and writes the index back, GIT_OPTIONAL_LOCKS=0 or not."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tests.state.runs.test_workload import BENCH, cli, git, lever, plan_file

WORKLOAD = """
[workload]
command = ["python", "bench.py", "--a=1"]
metric = { name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }
warmup = 0
"""


def tree(root: Path) -> dict[str, str]:
    """Every file of the working tree (the store is outside it), by content."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] != ".git"}


def index(root: Path) -> tuple[bytes, int]:
    path = root / ".git" / "index"
    return path.read_bytes(), path.stat().st_mtime_ns


def test_status_and_a_run_leave_the_users_index_and_tree_as_they_were(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH.read_text(encoding="utf-8"), encoding="utf-8")
    (repo / "notes.md").write_text("notes\n", encoding="utf-8")
    plan = plan_file(repo, lever("la", 'candidate_args = ["--a=2"]'), workload=WORKLOAD)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "bench")
    # mid-work: an uncommitted edit, an untracked file, and a tracked file touched (its content as committed, its
    # mtime 100 s older than the index knows: a stat git would refresh, with no race against the clock)
    (repo / "notes.md").write_text("notes\nwork in progress\n", encoding="utf-8")
    (repo / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    st = (repo / "bench.py").stat()
    os.utime(repo / "bench.py", ns=(st.st_atime_ns, st.st_mtime_ns - 100 * 10**9))
    files, before = tree(repo), index(repo)
    db = tmp_path / "db"

    out = json.loads(cli(plan, db, "--run", "la", "--json").stdout)["runs"][0]
    assert out["decision"] == "adopt"
    assert index(repo) == before and tree(repo) == files

    (la,) = json.loads(cli(plan, db, "status", "--json").stdout)["levers"]
    assert index(repo) == before and tree(repo) == files
    # the uncommitted edit is in the run's fingerprint, and the touch alone moved no code: no warning
    fp = json.loads(cli(plan, db, "runs", "--json").stdout)["runs"][0]["fingerprint"]["repo"]
    assert fp["diff"] and len(fp["head"]) == 40
    assert la["state"] == "adopted" and not [w for w in la["warnings"] if "code changed" in w], la["warnings"]
    assert index(repo) == before and tree(repo) == files
