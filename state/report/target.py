"""Writing an export to a file: the target checked first, then one atomic replace beside it.

With its charts (export_doc): every target is checked before anything is written; then the charts, each
replaced atomically, then the markdown, so a reader never finds the doc linking a chart not yet there; last,
the charts of levers no longer measured are removed (only files optseq wrote).
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Mapping

from optseq.state import atomic
from optseq.state.report import markdown as export, charts as export_charts
from optseq.state.report.marker import MARKER, is_export
from optseq.state.store.layout import DB_NAME, RUNS_DIR
from optseq.state.store.locks import HOLDER_NAME, LOCK_NAME

STORE_FILES = (DB_NAME, LOCK_NAME, HOLDER_NAME)
"""Files of the state directory an export must never replace (their temp files, `.NAME.*.tmp`, neither)."""


TAIL_BYTES = 4096
"""How much of an existing file's end is read to find the export marker on its last line."""

DOCS_DIR = "docs"
"""The folder beside the state directory an export goes to unless told otherwise."""


def default_target(store_dir: str | os.PathLike, title: str) -> Path:
    """Where an export goes unless told: `docs/<the plan's title>.md` beside the state directory, so a
    repo's `.optseq/` exports into its `docs/`, never into the repo root among its code."""
    name = re.sub(r"[^\w.-]+", "-", title.lower()).strip("-.") or "plan"
    return Path(os.path.abspath(store_dir)).parent / DOCS_DIR / f"{name}.md"


class ExportTargetError(ValueError):
    """An export target refused, with nothing written; str() is the one line shown to the user."""

    def __init__(self, path: str, problem: str):
        self.path = path
        super().__init__(f"cannot export to {_show(path) if path else repr(path)}: {problem}")


class NotAnExport(ExportTargetError):
    """The target exists and an optseq export did not write it: replaced only when forced (--force, or a
    yes in the console's confirmation)."""

    def __init__(self, path: str, hint: str = "pass --force to replace it"):
        super().__init__(path, f"the file exists and is not an optseq export (its last line is not "
                               f"{MARKER}); {hint}")


class NotAChart(NotAnExport):
    """A file in the charts' folder, named like a chart, that optseq did not write: replaced only when forced."""

    def __init__(self, path: str, hint: str = "pass --force to replace it"):
        ExportTargetError.__init__(self, path, f"the file exists and is not a chart optseq wrote (no "
                                               f"{export_charts.MARK!r} in its metadata); {hint}")


def export_doc(seq, path: str | os.PathLike, lang: str | None = None, *, force: bool = False,
               make_dir: bool = False) -> tuple[Path, str]:
    """Export `seq`'s plan and state to the file `path` with a chart per measured lever beside it, in the
    folder export_charts.folder_name names; returns (path, the markdown written).

    The doc and the charts are read from one state under the sequencer's lock; the charts (the slow part)
    are drawn after it is released. Refusals as write_export's, for the charts too (NotAChart unless `force`).
    `make_dir`: create the file's folder first if it is missing (one level: its own parent must exist), for
    the default target's `docs/`; a folder the user named is never created.
    """
    raw = os.fspath(path)
    made = _make_parent(raw, seq.store.directory) if make_dir else None
    try:
        return _export_doc(seq, raw, lang, force)
    except BaseException:
        if made is not None:
            try:
                made.rmdir()  # only if still empty: the refused export leaves no folder of its own behind
            except OSError:
                pass
        raise


def _export_doc(seq, raw: str, lang: str | None, force: bool) -> tuple[Path, str]:
    target = check_target(raw, seq.store.directory)
    folder = export_charts.folder_name(target.name)
    with seq.held.lock:
        # what the console's history plot draws of each lever: the machine's recent runs, never the runs journal
        # as stored: the charts read them as `optseq runs` hands them over (history_points)
        runs = {lever.id: [r.stored for r in seq.machine.runs.recent.get(lever.id, [])] for lever in seq.plan.levers}
        names = export_charts.chart_names(seq.plan, runs)
        text = export.render(seq.plan, seq.machine, seq.views.export_records(), lang=lang,
                             charts=export_charts.paths(folder, names))
    charts = export_charts.render_charts(seq.plan, runs, names)
    return write_export(raw, text, seq.store.directory, force=force, charts=charts), text


def write_export(path: str | os.PathLike, text: str, store_dir: str | os.PathLike | None = None, *,
                 force: bool = False, charts: Mapping[str, bytes] | None = None) -> Path:
    """Write `text` to the file `path` (temp file beside it, fsync, os.replace) and return `path`.

    Refuses an empty path, a directory, anything but a regular file, a missing directory (none is
    created), anything in the state directory, and, unless `force`, an existing file that is not an
    optseq export (NotAnExport; an empty file holds nothing to lose and is replaced); on any failure
    the temp file is removed and the target is left as it was.

    `charts` (file name -> SVG bytes) go into the charts' folder beside `path` (created if missing), each
    refused as the doc would be, and before it is written; optseq's charts not among them are removed
    there after. None leaves that folder alone (the doc links no charts).
    """
    raw = os.fspath(path)
    target = check_target(raw, store_dir)
    if not force:
        _ours_or_new(raw, target)
    folder = None
    if charts is not None:
        folder = target.parent / export_charts.folder_name(target.name)
        _check_charts(folder, charts, store_dir, force)
        if charts:
            _make_folder(raw, folder)
        for name, data in charts.items():
            _replace(os.fspath(folder / name), folder / name, data)
    _replace(raw, target, text.encode("utf-8"))
    if folder is not None:
        _prune(folder, set(charts or ()))
    return Path(raw)


def _replace(raw: str, target: Path, data: bytes) -> None:
    """One atomic replace of `target` by `data`; the file keeps the mode it had."""
    try:
        # a temp name of our own, not `<target>.tmp`: that may be the user's file, or too long for the file system;
        # some file systems cannot fsync a directory, which is no error
        atomic.replace(target, data, prefix=".optseq-export.", sync_dir="try")
    except atomic.AtomicWriteError as exc:
        if exc.stage == "temp":
            raise ExportTargetError(raw, f"cannot write in {_show(target.parent)} ({exc.strerror or exc})") from None
        raise ExportTargetError(raw, f"cannot write ({exc.strerror or exc})") from None


def _check_charts(folder: Path, charts: Mapping[str, bytes], store_dir, force: bool) -> None:
    """Refuse the charts' folder or one of its charts as check_target and _ours_or_new would the doc."""
    raw = os.fspath(folder)
    if store_dir is not None:
        # the folder may be a link: where it really is decides
        _not_the_store(raw, Path(os.path.realpath(folder)), Path(os.path.realpath(store_dir)))
    if not os.path.lexists(folder):
        return
    if not folder.is_dir():
        raise ExportTargetError(raw, "is where the export's charts go, and is not a directory")
    for name in charts:
        chart = os.fspath(folder / name)
        real = check_target(chart, store_dir)
        if not force:
            _chart_or_new(chart, real)


def _chart_or_new(raw: str, target: Path) -> None:
    """Pass a missing or empty file, or a chart optseq wrote; else NotAChart."""
    try:
        with open(target, "rb") as f:
            head = f.read(export_charts.HEAD_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot read it to check optseq wrote it ({exc.strerror or exc}); "
                                     "pass --force to replace it") from None
    if head and not export_charts.is_chart(head):
        raise NotAChart(raw)


def _make_parent(raw: str, store_dir) -> Path | None:
    """Create the folder `raw` goes in, if missing and if its own parent is a directory (else check_target
    says what is wrong), and return it; the state directory's checks come first, so nothing is made in it."""
    real = Path(os.path.realpath(raw))
    if not raw.strip() or os.path.lexists(real.parent) or not real.parent.parent.is_dir():
        return None
    if store_dir is not None:
        _not_the_store(raw, real, Path(os.path.realpath(store_dir)))
    try:
        real.parent.mkdir()
        return real.parent
    except FileExistsError:
        return None
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot create {_show(real.parent)} ({exc.strerror or exc})") from None


def _make_folder(raw: str, folder: Path) -> None:
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot create {_show(folder)} for its charts ({exc.strerror or exc})") from None


def _prune(folder: Path, keep: set[str]) -> None:
    """Remove the charts optseq wrote in `folder` that are not in `keep`, and the folder once it is empty.

    Best effort: the export is written by now, and a chart left behind is only a file the doc no longer
    links, not worth failing the export for.
    """
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name in keep or not entry.name.endswith(".svg"):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            with open(entry.path, "rb") as f:
                ours = export_charts.is_chart(f.read(export_charts.HEAD_BYTES))
            if ours:
                os.unlink(entry.path)
        except OSError:
            continue
    try:
        folder.rmdir()  # only if empty: a folder with anything of the user's in it stays
    except OSError:
        pass


def check_target(raw: str, store_dir: str | os.PathLike | None = None) -> Path:
    """The real path `raw` names, once it is known to be a file optseq may replace; else ExportTargetError."""
    if not raw.strip():
        raise ExportTargetError(raw, "no file name given")
    if "\0" in raw:  # the OS cannot take it, and os.path would raise a bare ValueError
        raise ExportTargetError(raw, "contains a NUL character")
    if raw.endswith(("/", os.sep)) or Path(raw).name in ("", ".", ".."):
        raise ExportTargetError(raw, "names a directory; give a file name such as plan.md")
    real = Path(os.path.realpath(raw))
    if store_dir is not None:
        _not_the_store(raw, real, Path(os.path.realpath(store_dir)))
    try:
        st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot write ({exc.strerror or exc})") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ExportTargetError(raw, "is a directory; give a file name such as plan.md")
        if not stat.S_ISREG(st.st_mode):
            raise ExportTargetError(raw, "is not a regular file")
        return real
    for ancestor in (real.parent, *real.parent.parents):
        if os.path.exists(ancestor):
            if not os.path.isdir(ancestor):
                raise ExportTargetError(raw, f"{_show(ancestor)} is not a directory")
            if ancestor != real.parent:
                raise ExportTargetError(raw, f"directory {_show(real.parent)} does not exist (create it first)")
            break
    return real


def _not_the_store(raw: str, real: Path, store: Path) -> None:
    runs = store / RUNS_DIR
    own = real.parent == store and any(real.name == name or real.name.startswith(f".{name}.") for name in STORE_FILES)
    if real == store or own or real == runs or runs in real.parents:
        raise ExportTargetError(raw, f"is one of the store's own files (state directory {_show(store)}); "
                                     "export elsewhere")
    # not even beside them, forced or not: the state directory is optseq's, and a file dropped there
    # could shadow one the store adds later (its layout is not the user's to plan around)
    if store in real.parents:
        raise ExportTargetError(raw, f"is in the state directory {_show(store)}; export elsewhere")


def _ours_or_new(raw: str, target: Path) -> None:
    """Pass a missing or empty target, or one whose last line is the export marker; else NotAnExport."""
    try:
        with open(target, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read(TAIL_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot read it to check it is an optseq export "
                                     f"({exc.strerror or exc}); pass --force to replace it") from None
    if not is_export(tail.decode("utf-8", errors="replace")):
        raise NotAnExport(raw)


def _show(path) -> str:
    # a path may hold a newline or a control character: keep the error on one line
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(path))
