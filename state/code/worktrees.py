"""optseq's worktrees: one checkout per commit of a repository, made with `git worktree add --detach` in optseq's
cache directory (never in the user's working tree), kept between runs as a build cache, listed and pruned by
`optseq doctor`.

Layout, under the cache (`$OPTSEQ_WORKTREES`, else `$XDG_CACHE_HOME/optseq/worktrees`, else
`~/.cache/optseq/worktrees`): a folder per repository (its name and a hash of its git directory), and in it per
commit the checkout `COMMIT/` beside its files `COMMIT.json` (what it is: repository, commit, the refs it was made
for, when made and last used), `COMMIT.setup.json` and `COMMIT.setup.log` (the workload's setup, run there once by
the arms driver), and two lock files: `COMMIT.lock` (held while the checkout is made) and `COMMIT.use` (held shared
by every run that uses it; `prune` removes only a checkout nobody holds).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from optseq.state.code import git as g

ROOT_ENV = "OPTSEQ_WORKTREES"
SUFFIXES = (".json", ".setup.json", ".setup.log", ".setup.lock", ".lock", ".use")
"""The files beside a checkout, removed with it."""
COMMIT = re.compile(r"[0-9a-f]{40}")


def cache_root() -> Path:
    """Where optseq keeps its worktrees."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "optseq" / "worktrees"


@dataclass(frozen=True)
class Tree:
    """One commit's checkout in the cache."""

    path: Path
    commit: str

    def beside(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    def for_driver(self, ref: str) -> dict:
        """What the arms driver needs of it: where it is, which commit, the ref it stands for, its setup's files."""
        return {"ref": ref, "commit": self.commit, "path": str(self.path),
                "setup_mark": str(self.beside(".setup.json")), "setup_log": str(self.beside(".setup.log")),
                "setup_lock": str(self.beside(".setup.lock"))}


def repo_folder(root: str | Path) -> Path:
    """The cache folder of the repository at `root` (any of its worktrees gives the same one)."""
    common = g.common_dir(root)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(root).resolve().name)[:40] or "repo"
    return cache_root() / f"{name}-{hashlib.sha1(str(common).encode()).hexdigest()[:10]}"


def ensure(root: str | Path, commit: str, ref: str, hold: contextlib.ExitStack) -> Tree:
    """The checkout of `commit` (a full id), made now unless a finished one is there, and held (shared) on `hold`
    before the lock that made it is let go, so that no prune removes it before its run uses it. GitError when git
    cannot make it; a checkout left half-made by a killed optseq is removed and made again."""
    if not COMMIT.fullmatch(commit):
        raise ValueError(f"not a full commit id: {commit!r}")
    folder = repo_folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    tree = Tree(folder / commit, commit)
    with _flock(tree.beside(".lock"), fcntl.LOCK_EX):
        meta = _read(tree.beside(".json"))
        now = _now()
        if meta.get("ready") and (tree.path / ".git").exists():
            refs = list(dict.fromkeys([*meta.get("refs", []), ref]))
            _write(tree.beside(".json"), {**meta, "refs": refs, "used": now})
            hold.enter_context(_flock(tree.beside(".use"), fcntl.LOCK_SH))
            return tree
        if tree.path.exists() or tree.path.is_symlink():
            _remove(meta.get("repo") or str(root), tree.path)
        for suffix in (".setup.json", ".setup.log"):  # a setup done in a checkout that is gone says nothing now
            tree.beside(suffix).unlink(missing_ok=True)
        # --force: a checkout whose folder was deleted by hand is still registered with git; make it again
        g.git(root, "worktree", "add", "--detach", "--force", "--quiet", str(tree.path), commit)
        if (tree.path / ".gitmodules").exists():
            g.git(tree.path, "submodule", "update", "--init", "--recursive", "--quiet")
        _write(tree.beside(".json"), {"repo": str(Path(root).resolve()), "git_dir": str(g.common_dir(root)),
                                      "commit": commit, "refs": [ref], "created": now, "used": now, "ready": True})
        hold.enter_context(_flock(tree.beside(".use"), fcntl.LOCK_SH))
    return tree


@contextlib.contextmanager
def using(trees: list[Tree]) -> Iterator[None]:
    """Hold the trees for a run: `prune` leaves a tree alone while any process holds it (the kernel drops the
    hold when its process dies, however it dies)."""
    with contextlib.ExitStack() as stack:
        for tree in trees:
            stack.enter_context(_flock(tree.beside(".use"), fcntl.LOCK_SH))
        yield


def held(spec: dict | None) -> list[Tree]:
    """The worktrees an arms driver spec names (none for a lever that is not a branch lever)."""
    trees = (spec or {}).get("trees") or {}
    return [Tree(Path(t["path"]), t["commit"]) for arm in ("baseline", "candidate")
            if isinstance(t := trees.get(arm), dict) and t.get("path")]


def listing() -> list[dict]:
    """Every checkout in the cache: {path, commit, repo, refs, created, used, setup, in_use, state, bytes}, oldest
    use first. `state` is `ready`, `half-made` (a killed optseq's) or `orphan` (a folder without its record)."""
    root = cache_root()
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        names = {p.name.split(".", 1)[0] for p in folder.iterdir()}
        for name in sorted(n for n in names if COMMIT.fullmatch(n)):
            tree = Tree(folder / name, name)
            meta = _read(tree.beside(".json"))
            setup = _read(tree.beside(".setup.json"))
            state = ("ready" if meta.get("ready") and (tree.path / ".git").exists() else
                     "half-made" if meta or tree.beside(".lock").exists() else "orphan")
            found.append({"path": str(tree.path), "commit": name, "repo": meta.get("repo"),
                          "refs": meta.get("refs") or [], "created": meta.get("created"), "used": meta.get("used"),
                          "setup": "done" if setup.get("ok") else None, "in_use": _held(tree.beside(".use")),
                          "state": state, "bytes": _size(tree.path)})
    return sorted(found, key=lambda t: str(t.get("used") or ""))


def prune() -> tuple[list[dict], list[dict]]:
    """Remove every checkout no run holds (`git worktree remove` in its repository, so git forgets it too).
    Returns (removed, kept in use)."""
    removed, kept = [], []
    for entry in listing():
        tree = Tree(Path(entry["path"]), entry["commit"])
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(_flock(tree.beside(".use"), fcntl.LOCK_EX | fcntl.LOCK_NB))
                stack.enter_context(_flock(tree.beside(".lock"), fcntl.LOCK_EX | fcntl.LOCK_NB))
            except BlockingIOError:
                kept.append(entry)
                continue
            _remove(entry.get("repo"), tree.path)
            for suffix in SUFFIXES:
                tree.beside(suffix).unlink(missing_ok=True)
        removed.append(entry)
    root = cache_root()
    for folder in (p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        with contextlib.suppress(OSError):
            folder.rmdir()  # only once empty
    return removed, kept


def _remove(repo: str | None, path: Path) -> None:
    """A checkout out of git's list and off the disk; a repository that is gone leaves only the folder to delete."""
    if repo and Path(repo).exists():
        with contextlib.suppress(g.GitError):
            g.git(repo, "worktree", "remove", "--force", "--force", str(path))
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@contextlib.contextmanager
def _flock(path: Path, how: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)


def _held(path: Path) -> bool:
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _size(path: Path) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        if ".git" in dirnames:
            dirnames.remove(".git")  # a submodule's objects are git's, not the checkout's
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
