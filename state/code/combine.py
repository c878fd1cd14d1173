"""Several branch levers' code in one commit, for a screen's design runs: the baseline with each lever's candidate
merged in, in plan order, computed by git's plumbing alone (`merge-tree --write-tree`, `commit-tree`), so the
user's working tree, index and refs are never touched. The trees and commits it writes go into the repository's
object store, as `git worktree add` writes git's own records: no ref names them; the worktree checked out at one
keeps it from `git gc` while it lives, and an unused one is pruned with the other unreachable objects.

A combination's commit is the same every time (a fixed author, date and message: the levers it holds and the
commits they are on), so one worktree per combination is made once and reused by later screens, as a branch
lever's own run reuses its commit's (worktrees.py). Where one lever's candidate already holds the rest (a branch
made on the baseline), the combination is that commit itself: the lever's own runs and the screen share its
worktree.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from optseq.state.code import git as g

AUTHOR = {"GIT_AUTHOR_NAME": "optseq", "GIT_AUTHOR_EMAIL": "optseq@localhost", "GIT_AUTHOR_DATE": "@0 +0000",
          "GIT_COMMITTER_NAME": "optseq", "GIT_COMMITTER_EMAIL": "optseq@localhost",
          "GIT_COMMITTER_DATE": "@0 +0000"}
"""Who makes a combination, and when: fixed, so the same code makes the same commit (and the same worktree)."""


class Clash(Exception):
    """Two sides' code cannot be merged: `lever` (the one merged in) against `other` (a lever, or None for the
    baseline), in `files` (git's conflicted paths)."""

    def __init__(self, lever: str, other: str | None, files: list[str]):
        super().__init__(f"{lever} conflicts with {other or 'the baseline'} in {', '.join(files[:3])}")
        self.lever, self.other, self.files = lever, other, files


@dataclass(frozen=True)
class Branch:
    """One branch lever of a combination: its id, its candidate ref as written and the commit it named."""

    lever: str
    ref: str
    commit: str


def combined(root: str, base: str, branches: Sequence[Branch]) -> str:
    """The commit holding `base` and every branch's code, merged in the order given; Clash naming the first branch
    that cannot join and the side it meets, the baseline or a lever merged before it (found by merging the two
    alone). GitError where git cannot answer."""
    now = base
    inside: list[Branch] = []
    for one in branches:
        if g.is_ancestor(root, now, one.commit):
            now = one.commit  # the branch holds everything so far: its own commit, its own worktree
        elif not g.is_ancestor(root, one.commit, now):
            tree, files = merge_tree(root, now, one.commit)
            if tree is None:
                other, files = _against(root, base, one, inside, files)
                raise Clash(one.lever, other, files)
            now = g.git(root, "commit-tree", "--no-gpg-sign", tree, "-p", now, "-p", one.commit, "-m",
                        message(base, [*inside, one]), env=AUTHOR)
        inside.append(one)
    return now


def merge_tree(root: str, ours: str, theirs: str) -> tuple[str | None, list[str]]:
    """(the merged tree, []) or (None, the conflicted files). `merge-tree --write-tree` (git 2.38) merges in the
    object store alone: no index, no working tree, no lock of the user's."""
    said = g.git(root, "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs, ok=(0, 1))
    lines = said.splitlines()
    if not lines:
        raise g.GitError(f"git merge-tree in {root} said nothing")
    files = list(dict.fromkeys(line for line in lines[1:] if line))
    return (None, files) if files else (lines[0], [])


def _against(root: str, base: str, one: Branch, before: list[Branch], files: list[str]) -> tuple[str | None, list[str]]:
    """Which side `one` conflicts with, and in which files: the baseline (None), else the first lever before it that
    it cannot be merged with alone, else all of them together."""
    tree, alone = merge_tree(root, base, one.commit)
    if tree is None:
        return None, alone
    for other in before:  # each merged with the baseline before: merged alone, it meets no conflict
        tree, pair = merge_tree(root, combined(root, base, [other]), one.commit)
        if tree is None:
            return other.lever, pair
    return " + ".join(b.lever for b in before) or None, files


def message(base: str, branches: Sequence[Branch]) -> str:
    return (f"optseq: the code of {' + '.join(b.lever for b in branches)} on {base}\n\n"
            + "".join(f"{b.lever}: {b.ref} at {b.commit}\n" for b in branches))


@dataclass
class Combinations:
    """A screen's branch levers on their shared baseline, and the commit of each set of them a run puts on, made
    once a set (a set's commit is git's answer, the same each time it is asked)."""

    repo: str
    rel: str
    """Where the workload runs, relative to the repository's root: the same folder in each combination's worktree."""
    base_ref: str
    base: str
    branches: tuple[Branch, ...] = ()
    setup: tuple[str, ...] = ()
    made: dict[tuple[str, ...], str] = field(default_factory=dict)

    def commit(self, on: Iterable[str]) -> str:
        """The commit a run with the branch levers `on` launches (the baseline's where none is on); Clash or
        GitError where git cannot make it."""
        wanted = set(on)
        chosen = tuple(b for b in self.branches if b.lever in wanted)
        key = tuple(b.lever for b in chosen)
        if key not in self.made:
            self.made[key] = combined(self.repo, self.base, chosen)
        return self.made[key]

    def named(self, on: Iterable[str]) -> str:
        """`fast + wide` (`HEAD` where no branch lever is on): the ref a combination's worktree stands for."""
        wanted = set(on)
        return " + ".join(b.lever for b in self.branches if b.lever in wanted) or self.base_ref

    def to_dict(self) -> dict:
        return {"repo": self.repo, "rel": self.rel, "baseline": {"ref": self.base_ref, "commit": self.base},
                "levers": {b.lever: {"ref": b.ref, "commit": b.commit} for b in self.branches}}
