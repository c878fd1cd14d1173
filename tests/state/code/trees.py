"""What the code tests read of a working tree without git: the index file's identity, and a touch."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def index_stat(root: Path) -> tuple[str, int, int]:
    """The user's .git/index as a write would change it: its content, its mtime, its inode (a rename-over)."""
    path = root / ".git" / "index"
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_ino


def touch_tracked(path: Path) -> None:
    """A tracked file's mtime moved 100 s back, its content as committed: an index entry git would refresh (and
    write), with no race against the clock."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 100 * 10**9))
