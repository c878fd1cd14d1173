"""state/code/git.py on real repositories (tests/code_repo.py): every call in git's no-lock environment with stdin
closed, one-line errors, and each question's answer, including the ones a user's odd repository gives."""
from __future__ import annotations

import subprocess

import pytest

from optseq.state.code import git as g
from tests.code_repo import make_repo
from tests.state.code.trees import index_stat, touch_tracked

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def test_every_call_runs_without_optional_locks_or_prompts_and_in_git_s_c_locale(repo):
    # an alias that runs a shell prints the environment git itself was given
    said = g.git(repo.root, "-c", "alias.shown=!env", "shown").splitlines()
    assert {"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"} <= set(said)
    raw = g.raw(repo.root, "-c", "alias.shown=!env", "shown").stdout.splitlines()
    assert b"GIT_OPTIONAL_LOCKS=0" in raw


def test_stdin_is_closed_unless_text_is_given(repo):
    assert g.git(repo.root, "hash-object", "--stdin") == EMPTY_BLOB  # EOF at once: nothing waits on a terminal
    given = g.git(repo.root, "hash-object", "--stdin", given="hello\n")
    assert given == subprocess.run(["git", "hash-object", "--stdin"], input="hello\n", capture_output=True,
                                   text=True, check=True).stdout.strip()


def test_a_failure_is_one_line_naming_the_repository_and_git_s_fatal_line(repo):
    with pytest.raises(g.GitError) as caught:
        g.git(repo.root, "cat-file", "-p", "no-such-ref")
    said = str(caught.value)
    assert "\n" not in said and said.startswith(f"git cat-file -p in {repo.root} failed: fatal: ")
    assert g.git(repo.root, "cat-file", "-e", "main:no-such-file", ok=(0, 128)) == ""  # an exit the caller expects


def test_cause_puts_a_full_disk_first_then_fatal_then_the_last_line():
    assert g.cause("error: x\nfatal: y\nerror: unable to write: No space left on device\nCould not reset index "
                   "file\n") == "error: unable to write: No space left on device"
    assert g.cause("warning: a\nfatal: the cause\nhint: b\n") == "fatal: the cause"
    assert g.cause("warning: a\n\n  last words  \n\n") == "last words"
    assert g.cause("") == ""


def test_raw_gives_bytes_as_committed_and_the_exit_to_the_caller(repo):
    side = repo.root.parent / "side-bytes"
    repo.git("worktree", "add", "--quiet", str(side), "same")
    data = bytes(range(256)) * 3
    (side / "blob.bin").write_bytes(data)
    repo.git("add", "blob.bin", cwd=side)
    repo.git("commit", "--quiet", "-m", "bytes", cwd=side)
    repo.git("worktree", "remove", str(side))
    found = g.raw(repo.root, "cat-file", "blob", "same:blob.bin")
    assert found.returncode == 0 and found.stdout == data
    missing = g.raw(repo.root, "cat-file", "-e", "main:blob.bin")
    assert missing.returncode == 128 and isinstance(missing.stderr, bytes)


def test_git_missing_is_a_git_error_in_one_line(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo.root / "no-bin-here"))
    with pytest.raises(g.GitError, match="^git is not installed .*$"):
        g.git(repo.root, "status")
    with pytest.raises(g.GitError, match="^git is not installed"):
        g.raw(repo.root, "status")


def test_toplevel_common_dir_and_commits(repo, tmp_path):
    (repo.root / "sub").mkdir()
    assert g.toplevel(repo.root / "sub") == repo.root
    outside = tmp_path / "outside"
    outside.mkdir()
    assert g.toplevel(outside) is None
    side = tmp_path / "side-common"
    repo.git("worktree", "add", "--quiet", "--detach", str(side), "fast")
    assert g.common_dir(side) == g.common_dir(repo.root) == (repo.root / ".git").resolve()
    assert g.has_commits(repo.root)
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "--quiet", str(empty)], check=True)
    assert not g.has_commits(empty)


def test_resolve_names_a_commit_or_none_and_never_reads_a_ref_as_an_option(repo):
    fast = repo.commit("fast")
    assert g.resolve(repo.root, "fast") == fast and len(fast) == 40
    assert g.resolve(repo.root, "fast~1") == repo.commit("main")
    assert g.resolve(repo.root, "no-such-branch") is None
    assert g.resolve(repo.root, f"--output={repo.root / 'written'}") is None
    assert not (repo.root / "written").exists()
    assert g.resolve(repo.root, "main^{tree}") is None  # a tree is no commit


def test_candidates_lists_the_objects_a_prefix_names(repo):
    fast = repo.commit("fast")
    assert fast in g.candidates(repo.root, fast[:7])
    assert g.candidates(repo.root, "xyz1") == [] and g.candidates(repo.root, "abc") == []  # not hex, too short
    assert g.candidates(repo.root, fast) == []  # a full id is no prefix


def test_changed_files_lists_tracked_changes_and_leaves_the_index_as_it_is(repo):
    touch_tracked(repo.root / "bench.py")  # its stat changed, not its content: what a refresh would write
    before = index_stat(repo.root)
    assert g.changed_files(repo.root) == ["notes.md"]  # not the untracked scratch.txt, not the touched bench.py
    assert index_stat(repo.root) == before


def test_is_shallow_is_ancestor_count_and_short(repo, tmp_path):
    main, fast = repo.commit("main"), repo.commit("fast")
    assert not g.is_shallow(repo.root)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "fast", repo.root.as_uri(), str(clone)],
                   check=True)
    assert g.is_shallow(clone)
    assert g.is_ancestor(repo.root, main, fast) and not g.is_ancestor(repo.root, fast, main)
    assert g.is_ancestor(repo.root, fast, fast)
    with pytest.raises(g.GitError, match="git merge-base"):
        g.is_ancestor(repo.root, "0" * 40, fast)
    assert g.count(repo.root, main, fast) == 1 and g.count(repo.root, fast, main) == 0
    assert g.count(repo.root, "0" * 40, fast) is None
    assert g.short(fast) == fast[:7] and g.short(None) == ""


def test_landed_in_is_the_merge_or_the_commit_itself(tmp_path):
    repo = make_repo(tmp_path, dirty=False)
    fast, same = repo.commit("fast"), repo.commit("same")
    repo.git("merge", "--quiet", "--ff-only", "fast")
    assert g.landed_in(repo.root, fast, "main") == fast  # a fast-forward: the line runs through it
    repo.git("merge", "--quiet", "--no-ff", "--no-edit", "same")
    merge = repo.commit("main")
    assert merge not in (fast, same)
    assert g.landed_in(repo.root, same, "main") == merge
    assert g.landed_in(repo.root, merge, "main") == merge  # the commit is head
