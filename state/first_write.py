"""A store made by a writer's first write (Sequencer.open's mode "create"; Writer.first_write in writes.py makes
it): till then the writer reads the missing store as an empty one, so a write refused for bad input (a `decide`
without `--why`, an unknown lever, a ref that names nothing) leaves no folder behind, and a typo'd --db is refused
again by the next read instead of showing a fresh plan."""
from __future__ import annotations

from pathlib import Path

from optseq.state.store.layout import holds_store


def made_later(directory: str | Path, mode: str) -> bool:
    """Whether an open of `mode` leaves the store to its first write: "create" where no store is yet, in a folder
    or where nothing is (a file or a broken link in its place is refused by the write open, in its one line)."""
    path = Path(directory).expanduser()
    return mode == "create" and not holds_store(path) and (path.is_dir() or not (path.exists() or path.is_symlink()))
