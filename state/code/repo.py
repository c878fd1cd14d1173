"""The workload repository a run measured: git HEAD and a hash of its uncommitted diff, found from the arm's cwd."""
from __future__ import annotations

from pathlib import Path

# hashlib and subprocess are imported where git is asked: `status` reads this module for every lever
# and asks git only for a lever whose evidence run recorded a repository

GIT_WAIT_S = 30.0
"""A hang guard for git on a slow disk; git answers these in milliseconds."""


def state(cwd: str | Path) -> dict | None:
    """{root, head, diff}: the repository holding `cwd`, its HEAD commit, and a short hash of `git diff HEAD`
    (empty when the tree is clean); None outside a git repository or without git."""
    root = _git(cwd, "rev-parse", "--show-toplevel")
    head = _git(cwd, "rev-parse", "HEAD") if root else None
    if not root or not head:
        return None
    diff = _git(cwd, "diff", "HEAD", strip=False) or ""
    import hashlib

    return {"root": root, "head": head, "diff": hashlib.sha256(diff.encode()).hexdigest()[:12] if diff else ""}


def commits_between(root: str, old: str, new: str) -> int | None:
    """How many commits `new` is ahead of `old`; None when git cannot say (a rebased-away commit, no repo)."""
    count = _git(root, "rev-list", "--count", f"{old}..{new}")
    return int(count) if count and count.isdigit() else None


def _git(cwd, *args: str, strip: bool = True) -> str | None:
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=GIT_WAIT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() if strip else proc.stdout
