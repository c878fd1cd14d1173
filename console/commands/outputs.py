"""The files a command writes its result to besides stdout (compare's --export-json, --export-markdown and
$GITHUB_STEP_SUMMARY, --run's --export-json): each checked before anything runs, so a file that cannot be written
never loses a result hours later, and written whole (beside it, then renamed) or appended to."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from optseq.state.api import InputError


def check_target(path: Path, where: str, replace: bool) -> None:
    """InputError now, before any launch, for a path the result could not be written to: a folder, no folder to
    hold it, a file or folder this user cannot write. `replace`: written beside and renamed over it, else appended
    to (GitHub's step summary)."""
    if path.is_dir():
        raise InputError(f"{where} {path}: it is a folder; give a file's path ({_example(where)})")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"{where} {path}: its folder {folder} does not exist")
    if path.exists() and not path.is_file():
        raise InputError(f"{where} {path}: it is not a regular file")
    try:
        if path.exists() and not replace:
            with open(path, "a", encoding="utf-8"):  # opened to append, nothing written
                pass
        else:  # the result is written beside it first, then renamed: the folder must take a new file
            probe = folder / f".{path.name}.optseq-tmp"
            probe.touch()
            probe.unlink()
    except OSError as exc:
        raise InputError(f"{where} {path}: cannot be written ({exc.strerror or exc})") from None


def _example(where: str) -> str:
    return "result.json" if "json" in where else "summary.md"


def warned(write: Callable[[], None]) -> None:
    """A write that fails after the run (a disk filled meanwhile) is a warning: the run's result and exit stand."""
    try:
        write()
    except InputError as exc:
        print(f"optseq: warning: {exc}", file=sys.stderr, flush=True)


def append_file(path: str, text: str, where: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:  # GitHub appends each step's part
            f.write(text + "\n")
    except OSError as exc:
        raise InputError(f"{where} {path}: {exc.strerror or exc}") from None


def write_file(path: Path, text: str, where: str) -> None:
    from optseq.state.api import atomic

    try:
        atomic.replace(path, (text + "\n").encode("utf-8"), keep_mode=False, suffix=".optseq-tmp", fsync=False,
                       sync_dir="no")
    except OSError as exc:
        raise InputError(f"{where} {path}: {exc.strerror or exc}") from None


def emit_json(doc: dict, to_stdout: bool, export: Path | None) -> None:
    """A command's JSON result: on stdout with --json, into FILE with --export-json FILE (either or both)."""
    text = json.dumps(doc, ensure_ascii=False, indent=2)
    if to_stdout:
        print(text, flush=True)
    if export is not None:
        warned(lambda: write_file(export, text, "--export-json"))


@dataclass(frozen=True)
class JsonOut:
    """Where a command's JSON result goes: stdout (--json), a file (--export-json FILE), both, or neither (its
    lines on stdout)."""

    stdout: bool = False
    file: Path | None = None

    @property
    def wanted(self) -> bool:
        return self.stdout or self.file is not None

    def emit(self, doc: dict) -> None:
        emit_json(doc, self.stdout, self.file)
