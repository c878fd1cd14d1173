"""optseq's worktrees: one checkout per commit of a repository, made with `git worktree add --detach` in optseq's
cache directory (never in the user's working tree), kept between runs as a build cache, listed and pruned by
`optseq doctor`.

Layout, under the cache (`$OPTSEQ_WORKTREES`, else `$XDG_CACHE_HOME/optseq/worktrees`, else
`~/.cache/optseq/worktrees`): a folder per repository (its name and a hash of its git directory), and in it per
commit the checkout `COMMIT/` beside its files `COMMIT.json` (what it is: repository, commit, the refs it was made
for, when made and last used), `COMMIT.setup.json` and `COMMIT.setup.log` (the workload's setup, run there once by
the arms driver), and two lock files: `COMMIT.lock` (held while the checkout is made or reset, by optseq and the
gits it starts there) and `COMMIT.use` (held shared by every run that uses it; `prune` removes only a checkout
nobody holds). While a checkout is made it is `COMMIT.making-PID-RAND/`, with its own `….lock`, renamed to `COMMIT/`
once whole.

What is measured must be the commit: a checkout is verified clean (its tracked files, git status) each time a run
takes it, and reset from its commit when it is not; the arms driver checks it again after the setup and after each
launch (engine/arms/trees.py).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from optseq.state import atomic, flock
from optseq.state.code import git as g
from optseq.state.cache_root import cache_root as cache_root_of_optseq
from optseq.state.errors import InputError

ROOT_ENV = "OPTSEQ_WORKTREES"
SUFFIXES = (".json", ".setup.json", ".setup.log", ".setup.lock", ".lock", ".use")
"""The files beside a checkout, removed with it."""
COMMIT = re.compile(r"[0-9a-f]{40}")
LOW_SPACE = 16 * 1024 ** 2
"""Free bytes under which a checkout git could not write is put down to a full disk."""
ASIDE = ".making-"
"""`COMMIT.making-PID-RAND`: a checkout being made, renamed to `COMMIT` once whole; `….lock` beside it is held by
the optseq making it and by every git it starts, so that one whose processes are all gone is known as dead."""


def cache_root() -> Path:
    """Where optseq keeps its worktrees."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV]).expanduser()
    root = cache_root_of_optseq()
    if root is None:
        raise InputError(f"no folder for optseq's worktrees: set {ROOT_ENV}, XDG_CACHE_HOME or HOME")
    return root / "worktrees"


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


class Note(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A checkout's note (`COMMIT.json`), in the order `ensure` writes it: which repository, commit and refs it was
    made for, when made and last used, and whether it was made whole."""
    repo: str | None = None
    git_dir: str | None = None
    commit: str | None = None
    refs: list[str] = []
    created: str | None = None
    used: str | None = None
    ready: bool = False


class Setup(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """What the arms driver notes of the workload's setup in a checkout (`COMMIT.setup.json`, engine/arms/trees.py):
    read here for whether it ran to the end."""
    ok: bool = False


N = TypeVar("N", Note, Setup)


def repo_folder(root: str | Path) -> Path:
    """The cache folder of the repository at `root` (any of its worktrees gives the same one)."""
    common = g.common_dir(root)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(root).resolve().name)[:40] or "repo"
    return cache_root() / f"{name}-{hashlib.sha1(str(common).encode()).hexdigest()[:10]}"


def ensure(root: str | Path, commit: str, ref: str, hold: contextlib.ExitStack) -> Tree:
    """The checkout of `commit` (a full id), made now unless a finished one is there, verified clean (its tracked
    files are the commit's, else reset from it), and held (shared) on `hold` before the lock that made it is let
    go, so that no prune removes it before its run uses it. GitError when git cannot make it; InputError when it
    changed while another run holds it."""
    if not COMMIT.fullmatch(commit):
        raise ValueError(f"not a full commit id: {commit!r}")
    folder = repo_folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    tree = Tree(folder / commit, commit)
    with flock.held(tree.beside(".lock")) as lock:
        clear_aside(root, tree)
        note = _read(tree.beside(".json"), Note)
        now = _now()
        if note is not None and note.ready and (tree.path / ".git").exists() and _clean(tree, lock):
            refs = list(dict.fromkeys([*note.refs, ref]))
            _write(tree.beside(".json"), msgspec.to_builtins(msgspec.structs.replace(note, refs=refs, used=now)))
            hold.enter_context(flock.held(tree.beside(".use"), shared=True))
            return tree
        _make(root, tree, lock)
        _write(tree.beside(".json"), {"repo": str(Path(root).resolve()), "git_dir": str(g.common_dir(root)),
                                      "commit": commit, "refs": [ref], "created": now, "used": now, "ready": True})
        hold.enter_context(flock.held(tree.beside(".use"), shared=True))
    return tree


def changes(tree: Tree) -> list[str] | None:
    """The tracked files of the checkout that are not its commit's (HEAD moved counts as `HEAD`), [] when clean;
    None when git cannot say (no checkout there). Read with GIT_OPTIONAL_LOCKS=0: even the checkout's own index is
    left as it is, so that two runs holding one checkout never race for its index.lock."""
    try:
        head = g.git(tree.path, "rev-parse", "--verify", "--quiet", "HEAD", ok=(0, 1))
        files = g.changed_files(tree.path)
    except g.GitError:
        return None
    return (["HEAD"] if head != tree.commit else []) + files


def named(files: list[str], most: int = 5) -> str:
    """`a.py, b.py and 3 more`"""
    shown = ", ".join(files[:most])
    return shown + (f" and {len(files) - most} more" if len(files) > most else "")


def _clean(tree: Tree, lock: int) -> bool:
    """Whether the ready checkout is its commit's: clean, or reset to it now (`git reset --hard`: tracked files,
    its index and HEAD; untracked and ignored files stay, they are the build cache a checkout is kept for). False
    when it must be made again (git cannot read it, or a reset left it changed: a submodule, a folder where a file
    was). A changed checkout another run holds is not reset under that run: InputError."""
    found = changes(tree)
    if found == []:
        return True
    if found is None:
        return False
    if flock.is_held(tree.beside(".use")):
        raise InputError(f"optseq's checkout of {g.short(tree.commit)} ({tree.path}) has changed tracked files "
                         f"({named(found)}) while another run uses it: that run measures code that is not the "
                         "commit and fails; run again once it ends (a bench may write only untracked or ignored "
                         "files)")
    with contextlib.suppress(g.GitError):
        g.git(tree.path, "reset", "--hard", "--quiet", tree.commit, keep=(lock,))
    tree.beside(".setup.json").unlink(missing_ok=True)  # the setup ran beside code that was not the commit
    return changes(tree) == []


def _make(root: str | Path, tree: Tree, lock: int) -> None:
    """Check the commit out aside, under a name of this attempt's own, and rename it into place once whole: a git
    left running by a killed optseq finishes or cleans up only its own aside, never the checkout a later run
    uses. Every git child inherits the aside's lock, so a later optseq sees the aside as alive while any of them
    lives, and makes its own beside it; those that touch the checkout in place (after the rename) inherit the
    commit's lock too, so a later optseq waits for them."""
    _remove(str(root), tree.path)  # a half-made one, or one deleted by hand that git still lists
    for suffix in (".setup.json", ".setup.log"):  # a setup done in a checkout that is gone says nothing now
        tree.beside(suffix).unlink(missing_ok=True)
    aside = tree.path.with_name(f"{tree.commit}{ASIDE}{os.getpid()}-{secrets.token_hex(4)}")
    marker = aside.with_name(aside.name + ".lock")
    fd = flock.open_lock(marker)
    try:
        flock.take(fd)
        keep = (lock, fd)
        try:
            g.git(root, "worktree", "add", "--detach", "--quiet", str(aside), tree.commit, keep=(fd,))
            os.rename(aside, tree.path)
            # git keeps the checkout's path in its own record: told the new one (git 2.39 has no `move` for a
            # checkout with submodules, hence a rename and `repair`)
            g.git(root, "worktree", "repair", str(tree.path), keep=keep)
            if (tree.path / ".gitmodules").exists():
                g.git(tree.path, "submodule", "update", "--init", "--recursive", "--quiet", keep=keep)
            # its own index's stat cache written once (optseq's, not the user's), so the clean checks before and
            # during runs, which write nothing, do not hash every file again
            g.git(tree.path, "update-index", "-q", "--refresh", ok=(0, 1), keep=keep)
        except BaseException as exc:
            for path in (aside, tree.path):
                with contextlib.suppress(OSError):
                    _remove(str(root), path)
            free = _free(tree.path.parent)
            if isinstance(exc, g.GitError) and free is not None and free < LOW_SPACE and "No space" not in str(exc):
                # git says `unable to write file` and `Could not reset index file`, never why: the disk is
                raise g.GitError(f"No space left on device ({free // 1024} KB free after git gave up: {exc})") from None
            raise
    finally:
        os.close(fd)
        marker.unlink(missing_ok=True)


def clear_aside(root: str | Path | None, tree: Tree) -> list[Path]:
    """Remove the asides of `tree` that no process holds (a killed optseq's, whose git has ended since): the
    folder, git's record of it, its lock. One a live git still holds is left to it. Returns those removed."""
    gone = []
    for path in sorted(tree.path.parent.glob(f"{tree.commit}{ASIDE}*")):
        if path.name.endswith(".lock"):
            if not path.with_name(path.name[:-5]).exists() and not flock.is_held(path):
                path.unlink(missing_ok=True)
            continue
        marker = path.with_name(path.name + ".lock")
        if flock.is_held(marker):
            continue
        _remove(str(root) if root else None, path)
        marker.unlink(missing_ok=True)
        gone.append(path)
    return gone


@contextlib.contextmanager
def using(trees: list[Tree]) -> Iterator[None]:
    """Hold the trees for a run: `prune` leaves a tree alone while any process holds it (the kernel drops the
    hold when its process dies, however it dies)."""
    with contextlib.ExitStack() as stack:
        for tree in trees:
            stack.enter_context(flock.held(tree.beside(".use"), shared=True))
        yield


def held(spec: dict | None) -> list[Tree]:
    """The worktrees an arms driver spec names (none for a lever that is not a branch lever)."""
    # a run's stored arms, not a note of this module: a Ray run names its trees otherwise (a string each)
    trees = (spec or {}).get("trees") or {}
    return [Tree(Path(t["path"]), t["commit"]) for arm in ("baseline", "candidate")
            if isinstance(t := trees.get(arm), dict) and t.get("path")]


def listing() -> list[dict]:
    """Every checkout in the cache: {path, commit, repo, refs,
    created, used, setup, in_use, state, changed, bytes}, oldest use first. `state` is `ready`, `dirty` (tracked
    files not the commit's: `changed` names them; the next run resets it), `half-made` (a killed optseq's) or
    `orphan` (a folder without its record)."""
    try:
        root = cache_root()
    except InputError:  # no home: no worktree could have been made
        return []
    found = []
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        names = {p.name.split(".", 1)[0] for p in folder.iterdir()}
        for name in sorted(n for n in names if COMMIT.fullmatch(n)):
            tree = Tree(folder / name, name)
            note = _read(tree.beside(".json"), Note)
            setup = _read(tree.beside(".setup.json"), Setup)
            state = ("ready" if note is not None and note.ready and (tree.path / ".git").exists() else
                     "half-made" if note is not None or tree.beside(".lock").exists() or _asides(tree) else "orphan")
            note = note or Note()
            changed = changes(tree) if state == "ready" else None
            if changed:
                state = "dirty"
            found.append({"path": str(tree.path), "commit": name, "repo": note.repo, "refs": note.refs,
                          "created": note.created, "used": note.used, "setup": "done" if setup and setup.ok else None,
                          "in_use": flock.is_held(tree.beside(".use")),
                          "state": state, "changed": changed or [], "bytes": _size(tree.path)})
    return sorted(found, key=lambda t: str(t["used"] or ""))


def prune(repo: str | Path | None = None) -> tuple[list[dict], list[dict]]:
    """Remove every checkout no run holds (`git worktree remove` in its repository, so git forgets it too), only
    those of the repository at `repo` when given; then `git worktree prune` in each repository touched, so that
    git lists none of optseq's paths as prunable (a checkout whose folder went with a moved repository or a
    failed submodule checkout). Returns (removed, kept in use)."""
    removed, kept = [], []
    only = repo_folder(repo) if repo is not None else None
    # git's own list names them too: the checkouts of a repository that moved are in the folder of its old path
    mine = {os.path.realpath(p) for p in registered(repo)} if repo is not None else set()
    repos = {str(Path(repo).resolve())} if repo is not None else set()
    for entry in listing():
        if only is not None and Path(entry["path"]).parent != only and os.path.realpath(entry["path"]) not in mine:
            continue
        tree = Tree(Path(entry["path"]), entry["commit"])
        with contextlib.ExitStack() as stack:
            if stack.enter_context(flock.taken(tree.beside(".use"))) is None \
                    or stack.enter_context(flock.taken(tree.beside(".lock"))) is None:
                kept.append(entry)
                continue
            clear_aside(entry["repo"], tree)
            _remove(entry["repo"], tree.path)
            for suffix in SUFFIXES:
                tree.beside(suffix).unlink(missing_ok=True)
        removed.append(entry)
        if entry["repo"]:
            repos.add(entry["repo"])
    for path in sorted(repos):
        if Path(path).is_dir():
            with contextlib.suppress(g.GitError):  # only git's records of folders that are gone
                g.git(path, "worktree", "prune")
    for folder in {Path(t["path"]).parent for t in removed} | ({only} if only is not None else set()):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only once empty
    return removed, kept


def registered(repo: str | Path) -> list[str]:
    """The paths of the worktrees git lists for the repository at `repo` (its own working tree first)."""
    try:
        said = g.git(repo, "worktree", "list", "--porcelain")
    except g.GitError:
        return []
    return [line.split(" ", 1)[1] for line in said.splitlines() if line.startswith("worktree ")]


def _free(folder: Path) -> int | None:
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def _asides(tree: Tree) -> list[Path]:
    return list(tree.path.parent.glob(f"{tree.commit}{ASIDE}*"))


def _remove(repo: str | None, path: Path) -> None:
    """A checkout out of git's list and off the disk; a repository that is gone leaves only the folder to delete.
    `remove` also forgets a path git lists whose folder is gone."""
    if repo and Path(repo).exists():
        with contextlib.suppress(g.GitError):
            g.git(repo, "worktree", "remove", "--force", "--force", str(path))
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _size(path: Path) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        if ".git" in dirnames:
            dirnames.remove(".git")  # a submodule's objects are git's, not the checkout's
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _read(path: Path, kind: type[N]) -> N | None:
    """The note at `path` as a `kind`; None where there is none, or no JSON object. A note of another shape
    (an edit, another optseq) is one that says nothing: present, not ready, so `ensure` makes its checkout again."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not data:  # an empty one says no more than none
        return None
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError:
        return kind()


def _write(path: Path, data: dict) -> None:
    # written under the checkout's lock; a leftover temp file's name still starts with its commit (listing)
    atomic.replace(path, json.dumps(data, indent=1).encode("utf-8"), keep_mode=False, prefix=f"{path.name}.",
                   fsync=False, sync_dir="no")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
