"""Git, asked through its command line: one small function per question, each a read of the repository except
`worktree add` and `worktree remove` (worktrees.py), which write only under git's own directory and optseq's cache.
Every git that optseq's state/ and console/ run goes through `git` or `raw` here (the Ray runner's file reads too);
the arms driver (engine/arms/trees.py) runs apart from optseq and may not import it, so it sets the same
GIT_OPTIONAL_LOCKS=0 itself, and the sync bench times a bare `git fetch` as a child, the floor it measures against.

Every call runs with GIT_OPTIONAL_LOCKS=0, so that no read refreshes the user's index behind their back, and
with stdin closed and a hang guard. GIT_OPTIONAL_LOCKS=0 is not enough for every porcelain command: `git diff`
(2.39) still writes the index it refreshed, so a read of the working tree asks plumbing (repo.py: diff-index).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_WAIT_S = 120.0
"""A hang guard: a worktree checkout of a large repository takes seconds, a read milliseconds."""


class GitError(Exception):
    """Git could not answer; str() is one line naming the repository and what git said."""


def git(cwd: str | Path, *args: str, ok: tuple[int, ...] = (0,), timeout: float = GIT_WAIT_S,
        keep: tuple[int, ...] = (), strip: bool = True, given: str | None = None,
        env: dict[str, str] | None = None) -> str:
    """git's stdout (stripped unless not `strip`) for `git -C cwd ARGS`; GitError with the stderr line that names
    the cause (a full disk, git's `fatal:`, else its last line) on another exit. `keep`: file descriptors git
    inherits (a lock that stays held while git, or a child of it, lives on after optseq is killed). `given`: text
    git reads on its stdin (plumbing: a tree's entries, a blob), else stdin is closed. `env`: more of git's
    environment (the sync's settings borrowed from the plan repository, state/sync/gitrefs.py)."""
    proc = _call(cwd, args, timeout, keep, given, env)
    if proc.returncode not in ok:
        raise GitError(f"git {' '.join(args[:2])} in {cwd} failed: {cause(proc.stderr) or f'exit {proc.returncode}'}")
    return proc.stdout.strip() if strip else proc.stdout


def raw(cwd: str | Path, *args: str, timeout: float = GIT_WAIT_S) -> subprocess.CompletedProcess[bytes]:
    """`git -C cwd ARGS` in the same environment, its exit, stdout and stderr as bytes: a blob byte for byte, and
    an exit the caller reads itself (`cat-file -e` says "no such file" by one). GitError only where git cannot
    run or hangs."""
    return _call(cwd, args, timeout, binary=True)


def cause(stderr: str) -> str:
    """The line of git's stderr that says why: a full disk first (git's last line after one is a consequence,
    `Could not reset index file`), then the first `fatal:`, then the last line."""
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in said:
        if "No space left on device" in line or "Disk quota exceeded" in line:
            return line
    return next((line for line in said if line.startswith("fatal:")), said[-1] if said else "")


def _call(cwd: str | Path, args: tuple[str, ...], timeout: float, keep: tuple[int, ...] = (),
          given: str | None = None, extra: dict[str, str] | None = None,
          binary: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, **(extra or {}), "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=not binary, timeout=timeout,
                              stdin=subprocess.DEVNULL if given is None else None, input=given, env=env,
                              errors=None if binary else "replace", pass_fds=keep)
    except FileNotFoundError:
        raise GitError("git is not installed (a branch lever and optseq compare ask git for commits)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} in {cwd} did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise GitError(f"git {args[0]} in {cwd} could not start: {exc.strerror or exc}") from None


def toplevel(path: str | Path) -> Path | None:
    """The root of the working tree holding `path`; None outside any git repository (or without git)."""
    try:
        root = git(path, "rev-parse", "--show-toplevel")
    except GitError:
        return None
    return Path(root) if root else None


def common_dir(root: str | Path) -> Path:
    """The repository's own git directory, shared by all its worktrees: what identifies the repository."""
    found = Path(git(root, "rev-parse", "--git-common-dir"))
    return (Path(root) / found).resolve() if not found.is_absolute() else found.resolve()


def has_commits(root: str | Path) -> bool:
    return git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1)) != ""


def resolve(root: str | Path, ref: str) -> str | None:
    """The full commit id `ref` names now (a branch, tag, commit or expression such as HEAD~2); None when it
    names none. `--end-of-options`: a ref is never read as an option, whatever the plan or the CI passes."""
    found = git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", ok=(0, 1, 128))
    return found if len(found) == 40 and all(c in "0123456789abcdef" for c in found) else None


def candidates(root: str | Path, prefix: str) -> list[str]:
    """The objects whose id starts with `prefix` (a hex string of 4 or more characters): more than one makes it an
    ambiguous short hash; [] for anything else."""
    if not (4 <= len(prefix) < 40 and all(c in "0123456789abcdef" for c in prefix.lower())):
        return []
    found = git(root, "rev-parse", f"--disambiguate={prefix.lower()}", ok=(0, 1, 128))
    return found.split()


def changed_files(root: str | Path) -> list[str]:
    """Tracked files whose working-tree or staged content differs from HEAD's (a submodule's too). `git status`, not
    `git diff`: under GIT_OPTIONAL_LOCKS=0 it leaves the index as it is (git 2.39's `diff HEAD` rewrites it to
    refresh its stat). The user's tree (compare's notice) and optseq's own checkouts (worktrees.changes) alike."""
    said = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", strip=False)
    return [entry[3:] for entry in said.split("\0") if len(entry) > 3]


def is_shallow(root: str | Path) -> bool:
    """Whether the clone lacks history (`git clone --depth`, a CI checkout's default): a BASE may be missing."""
    return git(root, "rev-parse", "--is-shallow-repository", ok=(0, 128)) == "true"


def is_ancestor(root: str | Path, commit: str, of: str) -> bool:
    """Whether `commit` is in `of`'s history (`of` itself included)."""
    proc = _call(root, ("merge-base", "--is-ancestor", commit, of), GIT_WAIT_S)
    if proc.returncode not in (0, 1):
        said = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        raise GitError(f"git merge-base in {root} failed: {said[-1] if said else f'exit {proc.returncode}'}")
    return proc.returncode == 0


def count(root: str | Path, old: str, new: str) -> int | None:
    """Commits in `new` that `old` lacks; None when git cannot say (a commit that no longer exists)."""
    try:
        found = git(root, "rev-list", "--count", f"{old}..{new}")
    except GitError:
        return None
    return int(found) if found.isdigit() else None


def landed_in(root: str | Path, commit: str, head: str) -> str:
    """The commit of `head`'s first-parent line that brought `commit` in: its merge, or `commit` itself when the
    line runs through it (a fast-forward, or work committed on the line). `commit` must be an ancestor of `head`."""
    line = git(root, "rev-list", "--first-parent", "--ancestry-path", f"{commit}..{head}").split()
    if not line:
        return commit  # commit is head
    oldest = line[-1]
    first_parent = git(root, "rev-parse", "--verify", "--quiet", f"{oldest}^1", ok=(0, 1, 128))
    return commit if first_parent == commit else oldest


def short(commit: str | None) -> str:
    """The 7-character form a person reads and types."""
    return str(commit or "")[:7]
