"""state/code/branch.py on real repositories: a branch lever's (or a compare's) two refs resolved into commits, the
one-line refusals of a repository or a ref it cannot measure, the checkouts its arms run in, and what happened to
the refs since a run."""
from __future__ import annotations

import contextlib
import subprocess

import pytest

from optseq.state.code import branch
from optseq.state.code.words import WORDS
from optseq.state.errors import InputError
from optseq.state.said import text
from tests.code_repo import make_repo


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def test_refs_resolve_into_the_commits_the_run_records(repo):
    (repo.root / "sub").mkdir()
    commits = branch.resolve(repo.root / "sub", None, "fast", "lever fast")
    assert commits.repo == str(repo.root) and commits.rel == "sub"
    assert commits.baseline == branch.Side("HEAD", repo.commit("main"))
    assert commits.candidate == branch.Side("fast", repo.commit("fast"))
    assert branch.Commits.of(commits.to_dict()) == commits
    assert commits.candidate.text() == f"fast ({repo.commit('fast')[:7]})"


def test_a_place_without_commits_to_measure_is_refused_in_one_line(tmp_path):
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    with pytest.raises(InputError, match=r"^lever x: .*nowhere is not in a git repository \(.*git init"):
        branch.repository(nowhere, "lever x")
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "--quiet", str(empty)], check=True)
    with pytest.raises(InputError, match=r"^compare: the repository at .*empty has no commits yet"):
        branch.repository(empty, "compare")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    with pytest.raises(InputError, match=r"^compare: .*bare\.git is in a bare git repository"):
        branch.repository(bare, "compare")


def test_a_ref_naming_no_commit_says_why_by_the_callers_name_for_it(repo, tmp_path):
    with pytest.raises(InputError) as caught:
        branch.resolve(repo.root, "main", "no-such", "compare", names=("BASE", "HEAD"))
    said = str(caught.value)
    assert "\n" not in said and said.startswith("compare: HEAD 'no-such' names no commit in ")
    assert "git branch -a" in said
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "fast", repo.root.as_uri(), str(clone)],
                   check=True)
    with pytest.raises(InputError, match=r"^lever fast: baseline_ref 'main' names no commit in .*a shallow clone"):
        branch.resolve(clone, "main", "HEAD", "lever fast")


def test_a_candidate_already_in_the_baseline_is_refused(tmp_path):
    repo = make_repo(tmp_path, dirty=False)
    apart = branch.resolve(repo.root, None, "fast", "lever fast")
    assert branch.inside(apart) is None
    branch.check_apart(apart, "lever fast")
    repo.git("merge", "--quiet", "--ff-only", "fast")
    merged = branch.resolve(repo.root, None, "fast", "lever fast")
    assert branch.inside(merged) == f"candidate fast ({repo.commit('fast')[:7]}) is in main's history"
    with pytest.raises(InputError, match=r"^lever fast: candidate fast .* is in main's history: nothing of it to "):
        branch.check_apart(merged, "lever fast")


def test_the_arms_checkouts_are_made_outside_the_users_tree_and_held(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "trees"))
    before = repo.snapshot()
    commits = branch.resolve(repo.root, None, "fast", "lever fast")
    with contextlib.ExitStack() as hold:
        spec = branch.trees(commits, ["python -c pass"], hold)
    assert spec["rel"] == "." and spec["setup"] == ["python -c pass"]
    for arm, side in (("baseline", commits.baseline), ("candidate", commits.candidate)):
        assert str(tmp_path / "trees") in str(spec[arm]), spec
        assert side.commit in str(spec[arm])
    assert repo.snapshot() == before


def test_what_happened_to_the_refs_since_a_run(tmp_path):
    repo = make_repo(tmp_path, dirty=False)
    run = branch.resolve(repo.root, None, "fast", "lever fast").to_dict()
    assert branch.moves(run, None, "fast") == branch.Moves(repo.commit("fast"), 0, repo.commit("main"), 0, None)
    moved = repo.commit_on("fast", "later.txt", "more\n", "more on fast")
    found = branch.moves(run, None, "fast")
    assert (found.candidate_now, found.candidate_ahead) == (moved, 1)
    repo.git("branch", "--force", "fast", "same")  # rewritten: the run's commit is not in it
    assert branch.moves(run, None, "fast").candidate_ahead is None
    repo.git("branch", "--delete", "--force", "fast")
    assert branch.moves(run, None, "fast").candidate_now is None
    repo.git("merge", "--quiet", "--no-ff", "--no-edit", run["candidate"]["commit"])
    landed = branch.moves(run, None, "same")
    assert landed.landed == repo.commit("main") and landed.baseline_ahead == 2  # the merge and the commit it brought
    assert branch.moves({"repo": str(tmp_path / "gone")}, None, "fast") is None
    assert branch.moves({**run, "repo": str(tmp_path / "gone")}, None, "fast") is None


def test_a_moved_ref_is_said_in_words():
    def said(*args):
        found = branch.moved_said(*args)
        return found and text(found, "en", WORDS)

    old, now = "a" * 40, "b" * 40
    assert said("fast", 7, old, old, 0) is None
    assert said("fast", 7, old, None, None) == "fast no longer names a commit (run 7 measured aaaaaaa)"
    assert said("fast", 7, old, now, None) == "fast was rewritten since run 7 (aaaaaaa is not in it now; it names " \
                                              "bbbbbbb)"
    assert said("fast", 7, old, now, 3) == "fast moved 3 commits since run 7 (aaaaaaa → bbbbbbb)"
    assert said("fast", 7, old, now, 1) == "fast moved 1 commit since run 7 (aaaaaaa → bbbbbbb)"
