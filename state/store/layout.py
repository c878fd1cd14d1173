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
