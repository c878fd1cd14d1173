"""Writing an export to a file: the target checked first, then one atomic replace beside it."""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from state.lock import HOLDER_NAME, LOCK_NAME
from state.store import DB_NAME, RUNS_DIR

STORE_FILES = (DB_NAME, LOCK_NAME, HOLDER_NAME)
"""Files of the state directory an export must never replace (their temp files, `.NAME.*.tmp`, neither)."""


class ExportTargetError(ValueError):
    """An export target refused, with nothing written; str() is the one line shown to the user."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"cannot export to {_show(path) if path else repr(path)}: {problem}")


def write_export(path: str | os.PathLike, text: str, store_dir: str | os.PathLike | None = None) -> Path:
    """Write `text` to the file `path` (temp file beside it, fsync, os.replace) and return `path`.

    Refuses an empty path, a directory, anything but a regular file, a missing directory (none is
    created) and the store's own files; on any failure the temp file is removed and the target is
    left as it was.
    """
    raw = os.fspath(path)
    target = check_target(raw, store_dir)
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
