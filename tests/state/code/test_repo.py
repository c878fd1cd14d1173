"""state/code/repo.py, the fingerprint a run records of the workload's repository: HEAD and a hash of the uncommitted
diff, read in the user's tree without writing its index and without any diff program or setting of theirs."""
from __future__ import annotations

import hashlib
import os
import stat

import pytest

from optseq.state.code import repo as fingerprint
from tests.code_repo import make_repo
from tests.state.code.trees import index_stat, touch_tracked


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def test_outside_a_repository_there_is_no_fingerprint(tmp_path):
    assert fingerprint.state(tmp_path) is None


def test_a_clean_tree_has_an_empty_diff_and_a_changed_one_a_short_hash(tmp_path):
    repo = make_repo(tmp_path, dirty=False)
    clean = fingerprint.state(repo.root / ".")
    assert clean == {"root": str(repo.root), "head": repo.commit("HEAD"), "diff": ""}
    (repo.root / "notes.md").write_text("notes\nchanged\n", encoding="utf-8")
    dirty = fingerprint.state(repo.root)
    assert dirty["head"] == clean["head"] and len(dirty["diff"]) == 12 and int(dirty["diff"], 16) >= 0
    assert fingerprint.state(repo.root) == dirty  # the same change, the same fingerprint
    (repo.root / "notes.md").write_text("notes\nchanged again\n", encoding="utf-8")
    assert fingerprint.state(repo.root)["diff"] != dirty["diff"]


def test_the_diff_is_git_diff_head_s_staged_and_unstaged_alike(repo):
    said = repo.git("diff", "HEAD", "--no-ext-diff", "--no-color") + "\n"
    assert fingerprint.state(repo.root)["diff"] == hashlib.sha256(said.encode()).hexdigest()[:12]
    before = fingerprint.state(repo.root)["diff"]
    repo.git("add", "notes.md")  # staged: still a change from HEAD, the same one
    assert fingerprint.state(repo.root)["diff"] == before


def test_the_fingerprint_leaves_the_users_index_as_it_was(repo):
    touch_tracked(repo.root / "bench.py")  # a stat a porcelain `git diff` would refresh and write back
    before = index_stat(repo.root)
    found = fingerprint.state(repo.root)
    assert found["diff"]  # notes.md's uncommitted change, read
    assert index_stat(repo.root) == before  # content, mtime and inode


def test_no_diff_program_or_diff_setting_of_the_user_runs_or_changes_it(repo, tmp_path):
    plain = fingerprint.state(repo.root)
    marker = tmp_path / "ran"
    program = tmp_path / "differ.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {marker}\necho other\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    repo.git("config", "diff.external", str(program))
    repo.git("config", "diff.upper.textconv", str(program))
    repo.git("config", "color.diff", "always")
    repo.git("config", "diff.noprefix", "true")
    repo.git("config", "diff.renames", "false")
    (repo.root / ".git" / "info").mkdir(exist_ok=True)
    (repo.root / ".git" / "info" / "attributes").write_text("*.md diff=upper\n", encoding="utf-8")
    assert fingerprint.state(repo.root) == plain
    assert not marker.exists()


def test_commits_between_counts_or_says_it_cannot(repo):
    main, fast = repo.commit("main"), repo.commit("fast")
    assert fingerprint.commits_between(str(repo.root), main, fast) == 1
    assert fingerprint.commits_between(str(repo.root), fast, fast) == 0
    assert fingerprint.commits_between(str(repo.root), "0" * 40, fast) is None
    assert fingerprint.commits_between(os.devnull, main, fast) is None
