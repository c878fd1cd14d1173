"""Where the CLI finds no store: a read of a path given by hand is refused (a typo must not read as a fresh plan);
a write, the console and the default folder's first command make one, and say so on stderr."""
from __future__ import annotations

import os
import sys
from pathlib import Path

WRITES = ("record", "plan", "fact", "decide", "compare", "landed")
"""Subcommands that write the store, and so create it where there is none (as --run and the console do)."""


def where_db(args) -> str:
    """Where the state directory's path came from, for a message about it."""
    if getattr(args, "db", None) is not None:
        return "--db"
    return "$OPTSEQ_DB" if os.environ.get("OPTSEQ_DB") else "default"


def no_store(db: Path, where: str) -> str:
    """A read's refusal where no store is and the path was given (--db, $OPTSEQ_DB): a typo'd path must not read
    as a fresh plan. The default folder (.optseq beside the plan a newcomer just wrote) is made by the first
    command, a read too, which says so (new_store_line)."""
    if (db.exists() or db.is_symlink()) and not db.is_dir():
        from optseq.state.api import what_path

        return f"no store at {db} (from {where}): it is {what_path(db)}, not a folder; check the path"
    return f"no store at {db} (from {where}): check the path; the console or a write (--run, record, ...) makes one"


def new_store_line(db: Path) -> str:
    return f"optseq: new store at {db}"


def create_store(plan_path: Path, db: Path) -> None:
    """Make the store the console is about to open, and say so: the plan first, so a bad one makes none."""
    from optseq.state.api import loader
    from optseq.state.api import Store, StoreUnwritable

    loader.load(plan_path)
    try:
        Store.open(db, mode="write").close()
    except StoreUnwritable:
        return  # a folder this user cannot write: the console opens the plan read-only, as it says itself
    print(new_store_line(db), file=sys.stderr, flush=True)
