"""The workload repository a run measured: git HEAD and a hash of its uncommitted diff, found from the arm's cwd."""
from __future__ import annotations

from pathlib import Path

# hashlib and git (with subprocess) are imported where git is asked: `status` reads this module for every lever
# and asks git only for a lever whose evidence run recorded a repository

GIT_WAIT_S = 30.0
"""A hang guard for git on a slow disk; git answers these in milliseconds."""

DIFF = ("diff-index", "-p", "-M", "--no-ext-diff", "--no-textconv", "--no-color", "HEAD", "--")
"""The uncommitted diff as `git diff HEAD` prints it with git's defaults (renames found, -M), asked of plumbing:
porcelain `git diff` rewrites the user's .git/index when a file's stat changed (a touch, a checkout), even under
GIT_OPTIONAL_LOCKS=0 on git 2.39, and diff-index writes nothing (a file whose stat alone changed is read and shows
no diff). Plumbing reads none of the user's diff config, and these flags say so: no external diff or textconv
program runs, no colour or other setting changes the fingerprint."""


def state(cwd: str | Path) -> dict | None:
    """{root, head, diff}: the repository holding `cwd`, its HEAD commit, and a short hash of `git diff HEAD`
    (empty when the tree is clean); None outside a git repository or without git."""
    root = _git(cwd, "rev-parse", "--show-toplevel")
    head = _git(cwd, "rev-parse", "HEAD") if root else None
    if not root or not head:
        return None
    diff = _git(cwd, *DIFF, strip=False) or ""
    import hashlib

    return {"root": root, "head": head, "diff": hashlib.sha256(diff.encode()).hexdigest()[:12] if diff else ""}


def commits_between(root: str, old: str, new: str) -> int | None:
    """How many commits `new` is ahead of `old`; None when git cannot say (a rebased-away commit, no repo)."""
    count = _git(root, "rev-list", "--count", f"{old}..{new}")
    return int(count) if count and count.isdigit() else None


def _git(cwd, *args: str, strip: bool = True) -> str | None:
    """git's answer through git.py (its environment: no optional locks, no prompt, stdin closed); None where git
    cannot answer, which these callers take for "no repository"."""
    from optseq.state.code import git

    try:
        return git.git(cwd, *args, timeout=GIT_WAIT_S, strip=strip)
    except git.GitError:
        return None
