"""The user's .git/index after every command that reads their working tree (issue 41, point 3): `status`, a branch
lever's run, a command-pair lever's run (which fingerprints the tree: HEAD and a hash of its uncommitted diff) and
`optseq compare` leave the index's content, mtime and inode as they were, in a tree mid-work with a tracked file
whose stat alone changed (the entry a porcelain `git diff` or `git status` with optional locks refreshes and writes
back). tests/state/code/test_user_index.py holds the same for a plain command-pair plan."""
from __future__ import annotations

import json

import pytest

from tests.code_repo import make_repo
from tests.state.code.trees import index_stat, touch_tracked
from tests.state.code.test_branch_levers import cli

FLAG = """
[[levers]]
id = "flag"
title = "a flag the bench ignores"
kind = "speedup"
timeout_s = 300
rule = { metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 6 }
[levers.arms]
candidate_env = { FLAG = "1" }
"""


@pytest.mark.slow  # a branch lever's run, a command-pair lever's run and a compare, each arm a process
def test_no_command_reading_the_users_tree_writes_its_index(tmp_path):
    repo = make_repo(tmp_path, levers_extra=FLAG)  # on main, notes.md changed, scratch.txt untracked
    touch_tracked(repo.root / "bench.py")
    before = index_stat(repo.root)
    db = tmp_path / "db"

    ran = json.loads(cli(repo, db, "--run", "fast", "--json").stdout)["runs"][0]
    assert ran["decision"] == "adopt", ran
    assert index_stat(repo.root) == before, "a branch lever's run"

    cli(repo, db, "--run", "flag", "--json", code=None)
    runs = json.loads(cli(repo, db, "runs", "--json").stdout)["runs"]
    flag = next(r for r in runs if r.get("lever") == "flag")
    fingerprint = flag["fingerprint"]["repo"]
    assert fingerprint["head"] == repo.commit("main") and fingerprint["diff"], fingerprint  # notes.md's change
    assert index_stat(repo.root) == before, "a command-pair lever's run and its fingerprint"

    # status asks git where each branch lever's refs are now, and fingerprints the tree against each run's
    levers = {v["id"]: v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}
    assert levers["fast"]["state"] == "adopted" and "flag" in levers, levers
    assert index_stat(repo.root) == before, "status"

    cli(repo, db, "compare", "main", "fast", "--json", code=None)
    assert index_stat(repo.root) == before, "compare"
