"""Writing an export to a file: the target checked first, then one atomic replace beside it."""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from optseq.state.export import MARKER, is_export
from optseq.state.store import DB_NAME, RUNS_DIR
from optseq.state.store.locks import HOLDER_NAME, LOCK_NAME

STORE_FILES = (DB_NAME, LOCK_NAME, HOLDER_NAME)
"""Files of the state directory an export must never replace (their temp files, `.NAME.*.tmp`, neither)."""


TAIL_BYTES = 4096
"""How much of an existing file's end is read to find the export marker on its last line."""


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


def write_export(path: str | os.PathLike, text: str, store_dir: str | os.PathLike | None = None, *,
                 force: bool = False) -> Path:
    """Write `text` to the file `path` (temp file beside it, fsync, os.replace) and return `path`.

    Refuses an empty path, a directory, anything but a regular file, a missing directory (none is
    created), anything in the state directory, and, unless `force`, an existing file that is not an
    optseq export (NotAnExport; an empty file holds nothing to lose and is replaced); on any failure
    the temp file is removed and the target is left as it was.
    """
    raw = os.fspath(path)
    target = check_target(raw, store_dir)
    if not force:
        _ours_or_new(raw, target)
    data = text.encode("utf-8")
    mode = None
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
    # a name of our own, not `<target>.tmp`: that may be the user's file, or too long for the file system
    tmp = target.parent / f".optseq-export.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise ExportTargetError(raw, f"cannot write in {_show(target.parent)} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise ExportTargetError(raw, f"cannot write ({exc.strerror or exc})") from None
        raise
    _fsync_dir(target.parent)
    return Path(raw)


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


def _fsync_dir(directory: Path) -> None:
    # the rename is durable only once the directory is; some file systems cannot fsync one, which is no error
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _show(path) -> str:
    # a path may hold a newline or a control character: keep the error on one line
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(path))
