"""The state directory's names: its files and folders, the history tables and the hot file's own tables."""
from __future__ import annotations

HISTORY = ("runs", "decisions", "criteria", "facts", "events")
"""Tables kept in journals: they grow with every run."""
HOT = ("levers",)
TABLES = ("levers", *HISTORY)
DB_NAME = "optseq.json"
RUNS_DIR = "runs"
JOURNAL_DIR = "journal"
META, META_ID = "meta", 1
ACTIVE = "active"
"""Runs in flight (run id, lever, pid): what recovery looks at, instead of every run ever."""
SNAPSHOT = "snapshot"


def holds_store(directory) -> bool:
    """Whether a store lives in `directory`: its hot file, or journals whose hot file was lost (doctor's case).
    A folder without either is no store, whatever else it holds: opening it to write makes a new one."""
    from pathlib import Path

    directory = Path(directory).expanduser()
    try:
        return (directory / DB_NAME).exists() or (directory / JOURNAL_DIR).is_dir()
    except OSError as exc:  # a folder this user may not look into (mode 000)
        from optseq.state.store.storage import StoreError

        raise StoreError(f"cannot look into the store directory {directory}: {exc.strerror or exc}") from None
