"""A branch lever's two commits, made ready where the arms run: each arm's checkout found (or copied from what a
cluster job shipped into the node's own cache), and the workload's setup run there once per commit.

optseq hands the driver, in the spec's `trees`, the repository-relative folder the arms run in (`rel`), the
`setup` command (or none) and per arm `{ref, commit, path | ship, setup_mark, setup_log, setup_lock}`: `path` is
a checkout optseq made on this machine; `ship` a folder the job's working directory holds, copied once into
`$OPTSEQ_NODE_TREES` (default: the node's temp folder) so that a commit's setup runs once per node, whatever
pair of commits a job shipped it with (its symlinks, which a zip unpacked by Ray cannot hold, made again from
the list shipped beside it). A setup that ended well leaves its mark (the command it ran); one that
failed leaves none, so the next run tries again (a missing compiler installed since, say).
"""
from __future__ import annotations

import collections
import contextlib
import fcntl
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


def _ready(arm: str, tree: dict, setup: list[str] | None, spec: dict, say) -> Path:
    if tree.get("ship"):
        root = _from_shipment(Path(tree["ship"]).resolve(), tree["commit"])
        files = {k: str(root.with_name(root.name + suffix)) for k, suffix in
                 (("setup_mark", ".setup.json"), ("setup_log", ".setup.log"), ("setup_lock", ".setup.lock"))}
    else:
        root, files = Path(tree["path"]), tree
    if setup:
        _setup(arm, tree, root, setup, files, spec, say)
    return root


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


def _setup(arm: str, tree: dict, root: Path, setup: list[str], files: dict, spec: dict, say) -> None:
    mark = Path(files["setup_mark"])
    with _locked(Path(files["setup_lock"])):
        if _mark(mark).get("argv") == list(setup) and _mark(mark).get("ok"):
            return
        cwd = root / spec["trees"].get("rel", ".")
        argv = [sys.executable, *setup[1:]] if setup[0] == "python" else list(setup)
        env = {"PYTHONUNBUFFERED": "1", **os.environ, **spec.get("stack_env", {}),
               "OPTSEQ_COMMIT": tree["commit"], "OPTSEQ_TREE": str(root)}
        env.pop("OPTSEQ_ARMS", None)
        label = f"{arm} {tree['ref']} ({tree['commit'][:7]})"
        say(f"[optseq] setup of {label}: {' '.join(setup)} in {cwd}")
        lines: collections.deque[str] = collections.deque(maxlen=KEEP)
        started = time.monotonic()
        with open(files["setup_log"], "w", encoding="utf-8") as log:
            try:
                proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
            except OSError as exc:
                raise SetupFailed(f"setup of {label} could not start {setup[0]!r}: {exc.strerror}; its log: "
                                  f"{files['setup_log']}") from None
            for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                lines.append(line)
                log.write(line + "\n")
                say(f"[setup {arm} {tree['commit'][:7]}] {line}")
            code = proc.wait()
        if code != 0:
            last = next((line for line in reversed(lines) if line.strip()), "(no output)")
            raise SetupFailed(f"setup of {label} failed: `{' '.join(setup)}` exited {code}; last output line: "
                              f"{last.strip()[:200]!r}; its log: {files['setup_log']}")
        mark.write_text(json.dumps({"argv": list(setup), "ok": True, "commit": tree["commit"],
                                    "seconds": round(time.monotonic() - started, 3)}), encoding="utf-8")
        say(f"[optseq] setup of {label} done in {time.monotonic() - started:.3g} s")


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
