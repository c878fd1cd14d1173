"""A branch lever's commits: its refs resolved when a run starts (what the run records), checked out into
worktrees for the arms, and what has happened to them since (the branch moved, the base moved, the commit landed).
"""
from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optseq.state.code import git as g
from optseq.state.said import say
from optseq.state.errors import InputError


@dataclass(frozen=True)
class Side:
    """One arm's code: the ref as written and the commit it named at the run's start."""

    ref: str
    commit: str

    def text(self) -> str:
        return f"{self.ref} ({g.short(self.commit)})"


@dataclass(frozen=True)
class Commits:
    """What a branch lever's run (or a compare) measures: two commits of one repository."""

    repo: str
    """The repository's root (the working tree the plan's folder is in)."""
    rel: str
    """Where the arms run, relative to the root: the plan's cwd, found again in each commit's worktree."""
    baseline: Side
    candidate: Side

    def to_dict(self) -> dict:
        return {"repo": self.repo, "rel": self.rel,
                "baseline": {"ref": self.baseline.ref, "commit": self.baseline.commit},
                "candidate": {"ref": self.candidate.ref, "commit": self.candidate.commit}}

    @classmethod
    def of(cls, data: dict) -> "Commits":
        return cls(data["repo"], data.get("rel", "."), Side(**data["baseline"]), Side(**data["candidate"]))


def repository(cwd: str | Path, who: str) -> Path:
    """The root of the git repository holding `cwd`; InputError when there is none or it has no commits."""
    root = g.toplevel(cwd)
    if root is None and _bare(cwd):
        raise InputError(f"{who}: {cwd} is in a bare git repository, which has no working tree to measure (a "
                         "branch lever and optseq compare run in a clone: git clone it and run optseq there)")
    if root is None:
        raise InputError(f"{who}: {cwd} is not in a git repository (a branch lever and optseq compare measure "
                         "commits: git init and commit the workload first)")
    if not g.has_commits(root):
        raise InputError(f"{who}: the repository at {root} has no commits yet (commit the workload first)")
    return root


def resolve(cwd: str | Path, baseline_ref: str | None, candidate_ref: str, who: str,
            names: tuple[str, str] = ("baseline_ref", "candidate_ref")) -> Commits:
    """Both refs as commits now, in the repository holding `cwd`; InputError naming the ref that names none, by
    `names` (a plan's keys; the CLI's BASE and HEAD)."""
    root = repository(cwd, who)
    sides = []
    for key, ref in zip(names, (baseline_ref or "HEAD", candidate_ref)):
        try:
            commit = g.resolve(root, ref)
            if commit is None:
                raise InputError(f"{who}: {key} {ref!r} {_names_none(root, ref)}")
        except g.GitError as exc:
            raise InputError(f"{who}: {exc}") from None
        sides.append(Side(ref, commit))
    rel = os.path.relpath(Path(cwd).resolve(), root.resolve())
    return Commits(str(root), rel, sides[0], sides[1])


def _names_none(root: Path, ref: str) -> str:
    """Why `ref` names no commit, in the words that lead to the fix: an ambiguous short hash, a shallow clone."""
    found = g.candidates(root, ref)
    if len(found) > 1:
        return (f"is ambiguous in {root}: {len(found)} objects' ids start with it (`git rev-parse "
                f"--disambiguate={ref}` lists them); give more of the commit's id")
    if g.is_shallow(root):
        return (f"names no commit in {root}, a shallow clone that may lack it (fetch its history: `git fetch "
                f"--unshallow`, or `fetch-depth: 0` in actions/checkout)")
    return (f"names no commit in {root} (`git branch -a` lists the branches; a remote one is origin/NAME, "
            f"fetched first)")


def check_apart(commits: Commits, who: str) -> None:
    """A candidate commit already in the baseline's history leaves nothing of it to measure against the baseline."""
    try:
        why = inside(commits)
    except g.GitError as exc:
        raise InputError(f"{who}: {exc}") from None
    if why:
        raise InputError(f"{who}: {why}: nothing of it to measure against the baseline (decide it by hand, or point "
                         "its candidate_ref at another ref)")


def inside(commits: Commits) -> str | None:
    """`candidate fastpath (abc1234) is in main's history` while the baseline holds the candidate's commit (a branch
    merged before its lever ran, fast-forward or not), naming the branch HEAD is on for a baseline of HEAD; None
    while they are apart."""
    base, cand = commits.baseline, commits.candidate
    if not g.is_ancestor(commits.repo, cand.commit, base.commit):
        return None
    name = base.ref
    if name == "HEAD":
        name = g.git(commits.repo, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1)) or "HEAD"
    return f"candidate {cand.text()} is in {name}'s history"


def trees(commits: Commits, setup: tuple[str, ...] | list[str], hold) -> dict:
    """The spec's `trees` for the arms driver, its worktrees made now where missing and held on `hold` (an
    ExitStack the run closes when it ends); InputError when git cannot make one."""
    from optseq.state.code import worktrees

    spec: dict[str, Any] = {"rel": commits.rel, "setup": list(setup) or None}
    for arm, side in (("baseline", commits.baseline), ("candidate", commits.candidate)):
        try:
            tree = worktrees.ensure(commits.repo, side.commit, side.ref, hold)
        except (g.GitError, OSError) as exc:
            raise InputError(f"cannot check out {side.text()} into optseq's worktrees ({worktrees.cache_root()}): "
                             f"{why_unmade(exc)}") from None
        spec[arm] = tree.for_driver(side.ref)
    return spec


def why_unmade(exc: Exception) -> str:
    """The cause a checkout failed, and what to do where there is one thing to do."""
    said = str(getattr(exc, "strerror", None) or exc)
    if "No space left on device" in said or getattr(exc, "errno", None) == errno.ENOSPC:
        free = re.search(r"\(([0-9]+ KB free)", said)
        return (f"the disk is full (No space left on device{', ' + free.group(1) if free else ''}); free space "
                f"there, `optseq doctor --prune` removes unused checkouts, or set {worktrees_env()} to a folder on a "
                "larger disk")
    if "transport 'file' not allowed" in said:
        return (f"{said} (a submodule whose URL is a local path: git refuses to clone one since 2.38.1 unless "
                "allowed; `git config --global protocol.file.allow always` allows it, if you trust the repositories "
                "you clone)")
    return said


def worktrees_env() -> str:
    from optseq.state.code.worktrees import ROOT_ENV

    return ROOT_ENV


def _bare(cwd: str | Path) -> bool:
    try:
        return g.git(cwd, "rev-parse", "--is-bare-repository") == "true"
    except g.GitError:
        return False


@dataclass(frozen=True)
class Moves:
    """What happened to a measured branch lever's code since its run."""

    candidate_now: str | None
    """The commit its candidate ref names now; None when the ref is gone."""
    candidate_ahead: int | None
    """Commits the ref gained since the run (None when it was rewritten: the run's commit is not in it)."""
    baseline_now: str | None
    baseline_ahead: int | None
    landed: str | None
    """Where the run's candidate commit came into the baseline's history (a merge, or the commit itself); None
    while it is not there."""


def moves(code: dict, baseline_ref: str | None, candidate_ref: str) -> Moves | None:
    """The refs now against a run's commits (`code`, as Commits.to_dict keeps it); None when git cannot say
    (the repository is gone, git is missing)."""
    try:
        was = Commits.of(code)
    except (KeyError, TypeError):
        return None
    root = was.repo
    if not Path(root).is_dir():
        return None
    try:
        cand_now = g.resolve(root, candidate_ref)
        base_now = g.resolve(root, baseline_ref or "HEAD")
        cand_ahead = _ahead(root, was.candidate.commit, cand_now)
        base_ahead = _ahead(root, was.baseline.commit, base_now)
        landed = (g.landed_in(root, was.candidate.commit, base_now)
                  if base_now and g.is_ancestor(root, was.candidate.commit, base_now) else None)
    except g.GitError:
        return None
    return Moves(cand_now, cand_ahead, base_now, base_ahead, landed)


def _ahead(root: str, old: str, new: str | None) -> int | None:
    if new is None or new == old:
        return 0 if new == old else None
    return g.count(root, old, new) if g.is_ancestor(root, old, new) else None


def moved_said(ref: str, run_id, old: str, now: str | None, ahead: int | None) -> dict | None:
    """`option-b moved 3 commits since run 7 (a1b2c3d → 9f8e7d6)`, a rewritten or deleted ref, as a said of
    code/words.py; None when it names the run's commit still."""
    if now == old:
        return None
    if now is None:
        return say("ref_gone", ref=ref, run=run_id, old=g.short(old))
    if ahead is None:
        return say("ref_rewritten", ref=ref, run=run_id, old=g.short(old), now=g.short(now))
    return say("ref_moved", ref=ref, ahead=ahead, s="s" * (ahead != 1), run=run_id, old=g.short(old),
               now=g.short(now))
