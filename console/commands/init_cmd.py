"""`optseq init [DIR]`: write the starter plan and its stand-in benchmark into DIR, then say what to do next.

The two files are real files in the package (configs/starter/ in the repository, optseq/configs/starter/ in an
install), read with importlib.resources and copied byte for byte: what the user gets is what the repository
tests. Nothing is ever overwritten without --force, and a refusal writes nothing. In a git work tree, init
also keeps optseq's state folder out of git: `.optseq/` is added to DIR's .gitignore (created if missing, never
twice).
"""
from __future__ import annotations

import os
import shlex
import sys
from importlib import resources
from pathlib import Path

from optseq.state import atomic

OK, BAD_INPUT, UNAVAILABLE = 0, 2, 3

PLAN = "optseq.toml"
BENCH = "optseq_bench.py"
STARTER = (PLAN, BENCH)
"""The files init writes, in the order it writes them; their templates are configs/starter/<same name>."""


class InitError(Exception):
    """One line on why init wrote nothing; `code` is the exit status."""

    def __init__(self, message: str, code: int = BAD_INPUT):
        super().__init__(message)
        self.code = code


def run_init(target: Path, force: bool = False, out=None, err=None) -> int:
    """The `optseq init` command: write the starter files into `target` and print the next steps."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        written = write_starter(target, force=force)
    except InitError as exc:
        print(f"optseq init: {exc}", file=err)
        return exc.code
    except OSError as exc:  # a path the file system refuses outright (too long, ...): still one line
        print(f"optseq init: {_show(target)}: {exc.strerror or exc}", file=err)
        return BAD_INPUT
    for path, what in zip(written, ("the plan: a fact, a decision gate and two levers on the benchmark",
                                    "a stand-in benchmark: a plain script, replace it with yours")):
        print(f"wrote {_show(path)}  ({what})", file=out)
    try:
        ignored = ignore_state(target)
    except OSError as exc:  # the starter is written; only the ignore line is missing: say so, still a success
        print(f"optseq init: could not add {STATE_DIR} to {_show(target / '.gitignore')}: "
              f"{exc.strerror or exc}", file=err)
    else:
        if ignored is not None:
            print(f"added {STATE_DIR} to {_show(ignored)}  (optseq's state, kept out of git)", file=out)
    print(next_steps(target), file=out)
    return OK


STATE_DIR = ".optseq/"
"""The line init adds to .gitignore: the store optseq keeps beside the plan (./.optseq when run there)."""


def ignore_state(target: Path) -> Path | None:
    """Add `.optseq/` to target/.gitignore when `target` is in a git work tree; the file written, or None.

    None outside git, and when the file already ignores the folder (as `.optseq`, `.optseq/`, `/.optseq` or
    `/.optseq/`): the line is never added twice. An existing file keeps every byte; the line goes at its end.
    """
    if not _in_git(target):
        return None
    path = target / ".gitignore"
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        current = b""
    lines = {line.strip() for line in current.decode("utf-8", "replace").splitlines()}
    if lines & {".optseq", ".optseq/", "/.optseq", "/.optseq/"}:
        return None
    sep = b"" if not current or current.endswith(b"\n") else b"\n"
    with open(path, "ab") as f:
        f.write(sep + STATE_DIR.encode() + b"\n")
    return path


def _in_git(target: Path) -> bool:
    """Whether `target` is inside a git work tree: a `.git` (a folder, or a worktree's file) here or above."""
    try:
        here = target.resolve()
    except OSError:
        return False
    return any((folder / ".git").exists() for folder in (here, *here.parents))


def templates() -> dict[str, bytes]:
    """The starter files' contents, from the installed optseq.configs package."""
    root = _configs() / "starter"
    contents = {}
    for name in STARTER:
        try:
            contents[name] = (root / name).read_bytes()
        except OSError:
            raise InitError(f"the starter file optseq/configs/starter/{name} is missing from this optseq install "
                            "(reinstall optseq)", UNAVAILABLE) from None
    return contents


def _configs():
    return resources.files("optseq.configs")


def write_starter(target: Path, force: bool = False) -> list[Path]:
    """Write the starter files into `target` (created if missing, one level); returns the paths written.

    Refuses, writing nothing, when a file is there already (unless `force`), when `target` is not a folder
    or its parent is missing, or when the folder cannot be written. Each file is written to a temporary
    name first and then renamed, both only after every check passed.
    """
    contents = templates()
    paths = [target / name for name in STARTER]
    created = _folder(target)
    try:
        for path in paths:
            if os.path.lexists(path):  # a dangling link counts: writing through it would create its target
                if not force:
                    raise InitError(f"{_show(path)} exists; not overwriting (remove it or pick another DIR; "
                                    "--force replaces it)")
                if path.is_dir() and not path.is_symlink():
                    raise InitError(f"{_show(path)} is a directory; not replacing it")
        temps: list[Path] = []
        try:
            # every file written aside before any is renamed: a failure leaves none of them
            for path in paths:
                temps.append(atomic.write_temp(path.parent, f".{path.name}.", contents[path.name], fsync=False)[0])
            for temp, path in zip(temps, paths):
                os.replace(temp, path)
        except OSError as exc:
            raise InitError(f"cannot write into {_show(target)}: {exc.strerror or exc}") from None
        finally:
            for temp in temps:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
    except InitError:
        if created:
            try:
                target.rmdir()
            except OSError:
                pass
        raise
    return paths


def _folder(target: Path) -> bool:
    """Make sure `target` is a folder; True when this call created it."""
    if target.is_dir():
        return False
    if os.path.lexists(target):
        raise InitError(f"{_show(target)} exists and is not a directory")
    parent = target.parent
    if not parent.is_dir():
        raise InitError(f"cannot create {_show(target)}: its parent {_show(parent)} does not exist "
                        "(init creates one folder, not a path: mkdir -p it first)")
    try:
        target.mkdir()
    except FileExistsError:
        if target.is_dir():
            return False
        raise InitError(f"{_show(target)} exists and is not a directory") from None
    except OSError as exc:
        raise InitError(f"cannot create {_show(target)}: {exc.strerror or exc}") from None
    return True


def next_steps(target: Path) -> str:
    """What to run next, as commands to copy."""
    here = _is_cwd(target)
    plan = target / PLAN
    lines = ["", "Next:"]
    if not here:
        lines.append(f"  cd {_quote(target)}")
    steps = [
        ("optseq --run ready", "measure the ready lever (fast_sum) and decide it: a few seconds"),
        ("optseq status", "each lever's state, what is next, what only you can do"),
        ("# pass the gate's last criterion, and no_copy becomes ready:", ""),
        ("optseq record prototype_works prototype same_result pass", ""),
        ("optseq --run ready", "measure no_copy, on top of fast_sum if that was adopted"),
        ("optseq", "the live console (? lists its keys, q quits)"),
    ]
    width = max(len(cmd) for cmd, why in steps if why) + 2
    lines += [f"  {cmd.ljust(width)}# {why}" if why else f"  {cmd}" for cmd, why in steps]
    lines += [
        "",
        f"Then make it yours: in {_show(plan)}, replace the [workload] command with your own benchmark",
        "(look for REPLACE), write each lever as the flags it changes, and check the file with `optseq validate`.",
        "optseq opens ./optseq.toml when you give no --plan and no $OPTSEQ_PLAN, and keeps its state in ./.optseq.",
    ]
    if not here:
        lines.append(f"Without cd: optseq --plan {_quote(plan)} --db {_quote(target / '.optseq')} --run ready")
    return "\n".join(lines)


def _is_cwd(target: Path) -> bool:
    try:
        return target.resolve() == Path.cwd().resolve()
    except OSError:
        return False


def _show(path: Path) -> str:
    """A path as the user typed it, printable (undecodable bytes escaped, not a crash)."""
    return os.fsdecode(path).encode("utf-8", "backslashreplace").decode("utf-8")


def _quote(path: Path) -> str:
    return shlex.quote(_show(path))
