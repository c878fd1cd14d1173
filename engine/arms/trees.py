"""A branch lever's two commits (or the commit each design run of a screen launches, engine/arms/points.py), made
ready where the arms run: each arm's checkout found (or copied from what a cluster job shipped into the node's own
cache), and the workload's setup run there once per commit.

optseq hands the driver, in the spec's `trees`, the repository-relative folder the arms run in (`rel`), the
`setup` command (or none) and per arm (per design run: its point's `tree`) `{ref, commit, path | ship, setup_mark,
setup_log, setup_lock}`: `path` is a checkout optseq made on this machine; `ship` a folder the job's working
directory holds, copied once into `$OPTSEQ_NODE_TREES` (default: the node's temp folder) so that a commit's setup
runs once per node, whatever set of commits (a pair, a screen's) a job shipped it with; its symlinks, which a
zip unpacked by Ray cannot hold, made again from the list shipped beside it. A setup that ended well leaves its
mark (a digest of what it ran: the command and the content of the scripts it runs, wherever they are, so that an
edited setup script runs again); one that failed leaves none, so the next run tries again (a missing compiler
installed since, say).

A checkout optseq made here is a git worktree of the commit, and what is measured in it must be the commit: its
tracked files are checked after the setup and after each launch of its arm (optseq verified them clean, or reset
them, as the run began). A setup or bench that edits a tracked file fails the run, naming the files.
"""
from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODE_TREES_ENV = "OPTSEQ_NODE_TREES"
KEEP = 200
"""Lines of a setup's output kept for its failure line; its log file has every line."""


class SetupFailed(Exception):
    """One line: the arm, its ref and commit, the setup command, how it ended and its last output line."""


def arm_dirs(spec: dict, say=print) -> dict[str, str]:
    """Each arm's working folder, its tree made ready first; SetupFailed when a setup fails."""
    trees = spec["trees"]
    done: dict[str, Path] = {}
    dirs = {}
    for arm in ("baseline", "candidate"):
        tree = trees[arm]
        if tree["commit"] not in done:
            done[tree["commit"]] = _ready(arm, tree, trees.get("setup"), spec, say)
        root = done[tree["commit"]]
        dirs[arm] = str(root / trees.get("rel", "."))
        if os.environ.get("OPTSEQ_PASS", "1") == "1":  # every pass's log has the commit in each line's mark
            say(f"[optseq] {arm}: {tree['ref']} at {tree['commit'][:7]} in {root}")
    return dirs


def ready(label: str, tree: dict, spec: dict, say=print) -> Path:
    """One tree's folder made ready (a screen's design run names its commit's tree alone): found, its setup run
    once, its checkout checked; SetupFailed when it is not the commit."""
    return _ready(label, tree, spec["trees"].get("setup"), spec, say)


def _ready(arm: str, tree: dict, setup: list[str] | None, spec: dict, say) -> Path:
    if tree.get("ship"):
        root = _from_shipment(Path(tree["ship"]).resolve(), tree["commit"])
        files = {k: str(root.with_name(root.name + suffix)) for k, suffix in
                 (("setup_mark", ".setup.json"), ("setup_log", ".setup.log"), ("setup_lock", ".setup.lock"))}
    else:
        root, files = Path(tree["path"]), tree
    label = f"{arm} {tree['ref']} ({tree['commit'][:7]})"
    rel = spec["trees"].get("rel", ".")
    if root.is_dir() and not (root / rel).is_dir():
        raise SetupFailed(f"{label} has no folder {rel!r}, where the plan's workload runs (its cwd, relative to "
                          f"the repository's root): not in that commit; its checkout: {root}")
    ran = bool(setup) and _setup(arm, tree, root, setup, files, spec, say)
    if tree.get("ship"):
        return root
    found = changed(root, tree["commit"])
    if found is None:
        raise SetupFailed(f"the checkout of {label} at {root} is gone" + (
            f" (its setup `{' '.join(setup)}` deleted it; a setup may write only inside it)" if ran else
            " (deleted since the run began; the next run makes it again)"))
    if found and ran:
        raise SetupFailed(f"setup of {label} changed tracked files of its checkout: {named(found)}; what would be "
                          "measured is not the commit (a setup may write only untracked or ignored files: "
                          f"generated ones in .gitignore); the next run resets the checkout: {root}")
    if found:
        raise SetupFailed(f"the checkout of {label} changed since the run began: {named(found)}; what would be "
                          f"measured is not the commit (a bench may write only untracked or ignored files); the "
                          f"next run resets the checkout: {root}")
    return root


def changed(root: Path, commit: str) -> list[str] | None:
    """The tracked files of a checkout that are not `commit`'s (`HEAD` when it names another commit), [] when
    clean; None when there is no checkout there. Read without writing even the checkout's own index
    (GIT_OPTIONAL_LOCKS=0: two runs may hold one checkout). The same question as state/code/worktrees.py's
    `changes`, asked here because the driver runs apart from optseq."""
    if not (root / ".git").exists():
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", "HEAD"], env=env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        said = subprocess.run(["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--untracked-files=no",
                               "--no-renames"], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=120, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    if said.returncode != 0:
        return None
    files = [entry[3:] for entry in said.stdout.split("\0") if len(entry) > 3]
    return (["HEAD"] if head.stdout.strip() != commit else []) + files


def named(files: list[str], most: int = 5) -> str:
    """`a.py, b.py and 3 more`"""
    return ", ".join(files[:most]) + (f" and {len(files) - most} more" if len(files) > most else "")


INTERPRETERS = ("python", "sh", "bash", "zsh", "dash", "node", "perl", "ruby", "julia", "Rscript")
"""A setup's first word that runs a script given after it (`python prepare.py`, `bash setup.sh`)."""


def setup_scripts(setup: list[str]) -> list[str]:
    """The files a setup runs: its first word, and the script an interpreter is given (not `-m` or `-c`, whose
    text is in the command). Only these: a file the setup writes (a log, a stamp it is told of) is no part of
    what it runs, and would make it run again each time."""
    scripts = [setup[0]]
    if Path(setup[0]).name.rstrip("0123456789.") in INTERPRETERS:
        for arg in setup[1:]:
            if arg in ("-m", "-c") or not arg.startswith("-"):
                scripts += [] if arg in ("-m", "-c") else [arg]
                break
    return scripts


def setup_digest(setup: list[str], cwd: Path) -> str:
    """What a setup runs: its command and the content of the scripts it runs (`./setup.sh`, `python prepare.py`,
    a script by its absolute path outside the repository, an ignored one), read where they are now."""
    digest = hashlib.sha256(json.dumps(list(setup)).encode())
    for arg in setup_scripts(setup):
        path = Path(arg).expanduser() if os.path.isabs(os.path.expanduser(arg)) else cwd / arg
        with contextlib.suppress(OSError, ValueError):
            if path.is_file() and path.stat().st_size < 64 * 1024 ** 2:
                digest.update(arg.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _from_shipment(shipped: Path, commit: str) -> Path:
    """The node's own copy of a shipped commit, copied once (under a lock: two jobs on one node share it)."""
    cache = Path(os.environ.get(NODE_TREES_ENV) or Path(tempfile.gettempdir()) / "optseq-trees")
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / commit
    with _locked(cache / f"{commit}.lock"):
        if not (cache / f"{commit}.copied").exists():
            if root.exists():
                shutil.rmtree(root)
            shutil.copytree(shipped, root, symlinks=True)
            _links(shipped, root)
            (cache / f"{commit}.copied").write_text(commit, encoding="utf-8")
    return root


def _links(shipped: Path, root: Path) -> None:
    """The commit's symlinks, made again from the list shipped beside its folder: a zip unpacked by Ray holds a
    link as a file of its target (state/runners/ray_trees.py)."""
    listed = shipped.with_name(shipped.name + ".links.json")
    if not listed.is_file():
        return
    for rel, target in json.loads(listed.read_text(encoding="utf-8")).items():
        link = root / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def _setup(arm: str, tree: dict, root: Path, setup: list[str], files: dict, spec: dict, say) -> bool:
    """The setup run in the checkout unless a mark says it ran there, as it is now; True when it ran now."""
    mark = Path(files["setup_mark"])
    with _locked(Path(files["setup_lock"])):
        cwd = root / spec["trees"].get("rel", ".")
        digest = setup_digest(setup, cwd)
        if _mark(mark).get("digest") == digest and _mark(mark).get("ok"):
            return False
        argv = [sys.executable, *setup[1:]] if setup[0] == "python" else list(setup)
        env = {"PYTHONUNBUFFERED": "1", **os.environ, **spec.get("stack_env", {}),
               "OPTSEQ_COMMIT": tree["commit"], "OPTSEQ_TREE": str(root)}
        env.pop("OPTSEQ_ARMS", None)
        label = f"{arm} {tree['ref']} ({tree['commit'][:7]})"
        say(f"[optseq] setup of {label}: {' '.join(setup)} in {cwd}")
        lines: collections.deque[str] = collections.deque(maxlen=KEEP)
        started = time.monotonic()
        try:
            log = open(files["setup_log"], "w", encoding="utf-8")
        except OSError as exc:
            raise SetupFailed(f"setup of {label} cannot write its log {files['setup_log']}: "
                              f"{exc.strerror or exc}") from None
        try:
            try:
                proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
            except OSError as exc:
                raise SetupFailed(f"setup of {label} could not start {setup[0]!r}: {exc.strerror}; its log: "
                                  f"{files['setup_log']}") from None
            try:
                for raw in proc.stdout:
                    line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                    lines.append(line)
                    log.write(line + "\n")
                    say(f"[setup {arm} {tree['commit'][:7]}] {line}")
                log.flush()
            except OSError as exc:  # the disk is full (the setup filled it, say): said, and the setup stopped
                proc.kill()
                proc.wait()
                raise SetupFailed(f"setup of {label} stopped: its log {files['setup_log']} cannot be written: "
                                  f"{exc.strerror or exc}" + (" (the setup may have filled the disk)"
                                                              if exc.errno == errno.ENOSPC else "")) from None
            code = proc.wait()
        finally:
            with contextlib.suppress(OSError):  # a full disk said above; its unwritten tail is not kept
                log.close()
        if code != 0:
            last = next((line for line in reversed(lines) if line.strip()), "(no output)")
            raise SetupFailed(f"setup of {label} failed: `{' '.join(setup)}` exited {code}; last output line: "
                              f"{last.strip()[:200]!r}; its log: {files['setup_log']}")
        try:
            mark.write_text(json.dumps({"argv": list(setup), "digest": digest, "ok": True, "commit": tree["commit"],
                                        "seconds": round(time.monotonic() - started, 3)}), encoding="utf-8")
        except OSError as exc:
            mark.unlink(missing_ok=True)
            raise SetupFailed(f"setup of {label} ran, but its mark {mark} cannot be written: "
                              f"{exc.strerror or exc}") from None
        say(f"[optseq] setup of {label} done in {time.monotonic() - started:.3g} s")
        return True


def _mark(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def _locked(path: Path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
