"""`optseq sync [REMOTE]`: the store shared through a git remote (state/sync/): this store's new records pushed on
its writer's own ref, every other writer's merged in. Says what it did in one line; exit 2 for a remote that names
nothing, 4 for a sync refused (a damaged or rewritten segment, a push the remote refused): state/exits.py."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from optseq.state.api import Exit



def run_sync(db: Path, plan: Path | None, remote: str) -> int:
    from optseq.state.api import GitError
    from optseq.state.api import Store
    from optseq.state.api import RemoteMissing
    from optseq.state.api import SegmentRefused
    from optseq.state.api import SyncRefused, sync_summary as summary, sync

    from optseq.state.api import holds_store
    from optseq.state.api import check_remote, remote_url

    plan_dir = plan.resolve().parent if plan is not None else Path.cwd()
    new = not holds_store(db)
    try:
        if new:  # a refused sync makes no store: the remote is asked before the folder is made
            check_remote(plan_dir if plan_dir.is_dir() else Path.cwd(), remote_url(plan_dir, remote))
        with Store.open(db, mode="write", on_wait=lambda text: print(f"optseq: {text}", file=sys.stderr)) as store:
            result = sync(store, plan_dir, remote, follow=lambda lines: follow(store, plan, lines))
    except RemoteMissing as exc:
        print(f"optseq: sync: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    except (SyncRefused, SegmentRefused, GitError) as exc:
        print(f"optseq: sync: {exc}", file=sys.stderr)
        return Exit.SYNC_REFUSED
    print(summary(result))
    if new:  # a fresh checkout's first sync made the store, as any first write does: said on stderr
        from optseq.console.commands.store_cmd import new_store_line

        print(new_store_line(db), file=sys.stderr)
    return Exit.OK



FOLLOW_AT = 1000
"""Merged lines from which the sync keeps the lever machine's snapshot itself: fewer are caught up by the next
command as any other process's commits are (a few milliseconds), and a sync of one run then imports no sequencer
(about a fifth of a second of its start); more would be replayed by every command until one writes (OPTSEQ_TEST_FOLLOW_AT sets another, for a test that
cannot sync thousands)."""


def follow(store, plan: Path | None, lines: list) -> None:
    """Inside the import's transaction: the plan's lever machine follows the merged lines and its snapshot is kept
    with them (the sequencer's Writer.imported), where there are many and the plan loads (a sync needs no plan)."""
    if len(lines) < int(os.environ.get("OPTSEQ_TEST_FOLLOW_AT") or FOLLOW_AT) or plan is None or not plan.is_file():
        return
    from optseq.state.api import loader
    from optseq.state.api import PlanError
    from optseq.state.api import Sequencer

    try:
        loaded = loader.load(plan)
    except PlanError:
        return
    Sequencer(loaded, store).writer.imported(lines)
