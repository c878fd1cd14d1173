"""The commits a Ray job runs, shipped with it: a branch lever's (or a compare's) two, or every commit a screen's
design runs launch (each the merge of the branch levers that run puts on, state/runs/screen_code.py). The job's
working directory is a zip holding each commit's files once, as `trees/<commit>/`, and its arms spec names those
folders (`ship`) instead of this machine's checkouts; on the node the arms driver copies each commit once into the
node's own cache and runs the workload's setup there once per commit (engine/arms/trees.py).

What is shipped: the files git tracks at the commit, read from optseq's worktree of it (so submodules, LFS content
and line endings are as a local run has them), a file a local setup changed there read from the commit instead;
never `.git`, nothing untracked (what a local setup built stays here: the node runs its own). Ray unpacks a zip's
symlink as a file holding its target, so each commit's symlinks travel as a list beside it
(`trees/<commit>.links.json`) and the driver makes them again.

Why a zip file, not a folder: Ray packs a folder itself and leaves out what the folder's `.gitignore` and
`.rayignore` files and its default excludes (.git, .venv, venv, __pycache__) name, so a tracked file among them
would not reach the node; a zip file is uploaded as it is, once per content (Ray names it by its hash). It is kept
in optseq's worktree cache beside the checkouts, one per set of commits: a pair's as `ray/<baseline>-<candidate>.zip`,
a screen's as `ray/set-<digest of its commits>.zip`; a later pass, a re-attached run or another run of the same
commits builds nothing. `prune` removes them.

The limit: Ray's job submission uploads the working directory to the dashboard, which takes less than 100 MiB
(ray_constants.DASHBOARD_CLIENT_MAX_SIZE; the GCS's own limit, GCS_STORAGE_MAX_SIZE, is 512 MiB). A set of commits
whose zip reaches it is refused before anything is submitted.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec

from optseq.state import atomic
from optseq.state.code import git
from optseq.state.runners.interface import RunnerError

LIMIT = 100 * 1024 * 1024
"""Bytes a job's working directory may reach (exclusive): the dashboard's upload limit."""
STAMP = (1980, 1, 1, 0, 0, 0)
"""Every entry's time: the zip's bytes, and so Ray's name for it, depend on the files alone."""
MANIFEST = "optseq-shipment.json"
"""The commits the zip holds, as a second entry at its top: Ray strips a lone top folder from an archive it
fetches from a remote URI, a rule that must never take `trees/` away."""
GIT_WAIT_S = 120.0
LINK, GITLINK = 0o120000, 0o160000
"""git's modes of a symlink and of a submodule."""


class TooLarge(RunnerError):
    """A set of commits whose zip reaches LIMIT; str() is the one line shown."""


class Tree(msgspec.Struct, frozen=True):
    """A commit's tree as the arms spec names it: a checkout of this machine (`path`, state/code/worktrees.py's
    `for_driver`, whose other fields stay in the spec as they are), or one shipped already (no path)."""
    ref: str
    commit: str
    path: str = ""


class _Pair(msgspec.Struct, frozen=True):
    baseline: Tree | None = None
    candidate: Tree | None = None


class _Point(msgspec.Struct, frozen=True):
    tree: Tree | None = None


class _Spec(msgspec.Struct, frozen=True):
    """What the shipment reads of the pass's arms spec (a lever's, a compare's, a screen's), the rest ignored."""
    trees: _Pair | None = None
    points: list[_Point] = []


@dataclass(frozen=True)
class Shipment:
    zip: Path
    arms: str
    """The OPTSEQ_ARMS the job gets: each tree as `{ship, ref, commit}`, no path of this machine."""
    fresh: bool
    """Packed now, not taken from the cache."""
    commits: tuple[str, ...] = ()
    """The commits the zip holds, each once, in its manifest's order."""


def shipment(arms_json: str | None, limit: int | None = None) -> Shipment | None:
    """The pass's shipment when its arms spec names checkouts on this machine (made now unless cached), else None:
    a pair's two commits (a branch lever's run, a compare, a screen's confirmation), or every commit a screen's
    design runs launch (`points`, each naming its commit's tree). TooLarge for a set over the limit (LIMIT unless
    told); RunnerError when a checkout cannot be read."""
    limit = LIMIT if limit is None else limit
    if not arms_json:
        return None
    try:
        typed = msgspec.json.decode(arms_json, type=_Spec)
    except msgspec.DecodeError as exc:  # optseq wrote it: a shape it never writes
        raise RunnerError(f"cannot read which commits to ship to Ray from the pass's arms spec: {exc}") from None
    spec = json.loads(arms_json)  # rewritten where it names a path here, every other key kept as it is
    pair = typed.trees
    if pair is not None and pair.baseline is not None and pair.candidate is not None \
            and pair.baseline.path and pair.candidate.path:
        sources = [pair.baseline, pair.candidate]
        path = cached(spec["trees"])
        spec["trees"] = {**spec["trees"], "baseline": _shipped(pair.baseline), "candidate": _shipped(pair.candidate)}
    else:
        local = {i: p.tree for i, p in enumerate(typed.points) if p.tree is not None and p.tree.path}
        if not local:
            return None
        sources = list(local.values())
        path = cached_set(sources)
        spec["points"] = [{**p, "tree": _shipped(local[i])} if i in local else p for i, p in enumerate(spec["points"])]
    commits = {tree.commit: tree for tree in sources}
    fresh = not path.is_file()
    if fresh:
        build(commits, path, limit)
    size = path.stat().st_size
    if size >= limit:  # one built under a larger limit
        raise TooLarge(_too_large(commits, size, limit))
    return Shipment(path, json.dumps(spec), fresh, tuple(commits))


def _shipped(tree: Tree) -> dict[str, str]:
    return {"ship": f"trees/{tree.commit}", "ref": tree.ref, "commit": tree.commit}


def cached(trees: dict) -> Path:
    """Where the pair's zip is kept: in the repository's folder of optseq's worktree cache, where its checkouts are."""
    folder = Path(trees["baseline"]["path"]).parent
    return folder / "ray" / f"{trees['baseline']['commit']}-{trees['candidate']['commit']}.zip"


def cached_set(sources: list[Tree]) -> Path:
    """Where a screen's zip is kept, beside the pairs': named by its commits (a digest of them, sorted: a design
    of six branch levers runs up to 64, more than a file name holds), so that every pass of the screen, a later
    screen of the same levers, or a re-attached one, finds it."""
    from optseq.state.sha import hex_digest

    commits = " ".join(sorted({tree.commit for tree in sources}))
    return Path(sources[0].path).parent / "ray" / f"set-{hex_digest(commits)[:40]}.zip"


def build(commits: dict[str, Tree], dest: Path, limit: int) -> None:
    """Each commit's files (`commits`: commit -> its tree, in the manifest's order) into `dest` (written aside, then
    moved in: a concurrent build of the same set is harmless)."""

    def pack(f: BinaryIO) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zipped:
            for commit, tree in commits.items():
                _add_tree(zipped, commit, Path(tree.path), tree.ref, commits, limit)
            zipped.writestr(_info(MANIFEST), json.dumps({"trees": list(commits)}))

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        # a pack is rebuilt from its commits when lost: neither it nor its rename is fsynced
        atomic.replace(dest, pack, mode=0o600, keep_mode=False, suffix=".part", fsync=False, sync_dir="no")
    except (OSError, UnicodeError) as exc:  # a full disk; a file name that is not UTF-8, which a zip cannot hold
        raise RunnerError(f"cannot pack the trees to ship to Ray in {dest.parent}: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None


def _add_tree(pack: zipfile.ZipFile, commit: str, root: Path, ref: str, commits: dict[str, Tree],
              limit: int) -> None:
    if not root.is_dir():
        raise RunnerError(f"cannot ship {ref} ({commit[:7]}) to Ray: its checkout {root} is gone (optseq doctor "
                          "--prune removed it?); run it again")
    changed = _changed(root)
    links = {}
    pack.writestr(_info(f"trees/{commit}/", 0o40755), b"")
    for mode, rel in _tracked(root):
        if mode == GITLINK:
            continue  # a submodule not checked out; one that is has its files listed
        name = f"trees/{commit}/{rel}"
        if rel in changed:
            data = _blob(root, commit, rel, filtered=mode != LINK)
            if data is None:
                continue  # staged there, never committed
            if mode == LINK:
                links[rel] = os.fsdecode(data)
            else:
                pack.writestr(_info(name, mode), data)
        elif mode == LINK:
            links[rel] = os.readlink(root / rel)
        else:
            with open(root / rel, "rb") as src, pack.open(_info(name, mode), "w") as out:
                shutil.copyfileobj(src, out, 1024 * 1024)
        packed = _packed(pack)
        if packed >= limit:
            raise TooLarge(_too_large(commits, packed, limit, partial=True))
    if links:
        pack.writestr(_info(f"trees/{commit}.links.json"), json.dumps(links))


def _packed(pack: zipfile.ZipFile) -> int:
    """Bytes written to the zip so far (its file is open while it is written)."""
    return pack.fp.tell() if pack.fp is not None else 0


def _too_large(commits: dict[str, Tree], size: int, limit: int, partial: bool = False) -> str:
    sides = joined([f"{tree.ref} ({commit[:7]})" for commit, tree in commits.items()])
    return (f"the files of {sides} are {'over ' if partial else ''}{size_text(size)} zipped; a Ray job's working "
            f"directory must stay under {size_text(limit)} (Ray's upload limit): keep large files out of the repository "
            "and have the workload's setup fetch them on the node")


def joined(words: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`"""
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def size_text(n: int) -> str:
    return f"{n / 1024 ** 2:.3g} MiB" if n >= 1024 ** 2 else f"{n / 1024:.3g} KiB" if n >= 1024 else f"{n} B"


def _info(name: str, mode: int = 0o100644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (mode & 0xFFFF) << 16 | (0x10 if name.endswith("/") else 0)
    return info


def _tracked(root: Path) -> list[tuple[int, str]]:
    """(git's mode, path) of every file the checkout tracks, its submodules' included."""
    out = _git(root, "ls-files", "-z", "--stage", "--recurse-submodules") or b""  # None only for an exit in ok
    found = {}
    for entry in os.fsdecode(out).split("\0"):
        if "\t" in entry:
            head, rel = entry.split("\t", 1)
            found[rel] = int(head.split(" ", 1)[0], 8)
    return [(mode, rel) for rel, mode in found.items()]


def _changed(root: Path) -> set[str]:
    """Tracked files the checkout no longer holds as committed (a local setup that rewrote a lock file, say)."""
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=all") or b""
    changed, skip = set(), False
    for entry in os.fsdecode(out).split("\0"):
        if skip or len(entry) < 4:
            skip = False
            continue
        changed.add(entry[3:])
        skip = "R" in entry[:2] or "C" in entry[:2]  # a rename's source path follows
    return changed


def _blob(root: Path, commit: str, rel: str, filtered: bool) -> bytes | None:
    """The file as committed (converted as a checkout converts it, when `filtered`); None when the commit has no
    such file."""
    if _git(root, "cat-file", "-e", f"{commit}:{rel}", ok=(0, 128)) is None:
        return None
    return _git(root, "cat-file", *(["--filters"] if filtered else ["blob"]), f"{commit}:{rel}")


def _git(root: Path, *args: str, ok: tuple[int, ...] = (0,)) -> bytes | None:
    """git's stdout; None for an exit in `ok` other than 0; RunnerError for any other."""
    try:
        proc = git.raw(root, *args, timeout=GIT_WAIT_S)
    except git.GitError as exc:
        raise RunnerError(f"cannot read the files to ship to Ray from {root}: {exc}") from None
    if proc.returncode == 0:
        return proc.stdout
    if proc.returncode in ok:
        return None
    said = [line for line in proc.stderr.decode(errors="replace").splitlines() if line.strip()]
    raise RunnerError(f"cannot read the files to ship to Ray from {root}: git {args[0]}: "
                      f"{said[-1].strip() if said else f'exit {proc.returncode}'}")


def listing(cache_root: Path | None = None) -> list[Path]:
    """Every zip kept in optseq's worktree cache (a pair's, a screen's)."""
    return sorted(_folder_files(cache_root, "*.zip"))


def prune(cache_root: Path | None = None) -> list[Path]:
    """Remove every zip, and what a killed optseq left half-packed (a run still going packs its commits again at
    its next pass, from the checkouts it holds). Returns the zips removed."""
    removed = listing(cache_root)
    for path in _folder_files(cache_root, "*"):
        path.unlink(missing_ok=True)
        try:
            path.parent.rmdir()  # once empty
        except OSError:
            pass
    return removed


def _folder_files(cache_root: Path | None, pattern: str) -> list[Path]:
    from optseq.state.code.worktrees import cache_root as worktrees_root

    root = cache_root or worktrees_root()
    return list(root.glob(f"*/ray/{pattern}")) if root.is_dir() else []  # pathlib's `*` takes dot files too
