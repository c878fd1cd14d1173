"""`optseq sync [REMOTE]`: the store shared through a git remote (state/sync/): this store's new records pushed on
its writer's own ref, every other writer's merged in. Says what it did in one line; exit 2 for a remote that names
nothing, 1 for a sync refused (a damaged or rewritten segment, a push the remote refused)."""
from __future__ import annotations

import sys
from pathlib import Path

OK, REFUSED, BAD_INPUT = 0, 1, 2


def run_sync(db: Path, plan: Path | None, remote: str) -> int:
    from optseq.state.code.git import GitError
    from optseq.state.store.store import Store
    from optseq.state.sync.gitrefs import RemoteMissing
    from optseq.state.sync.segments import SegmentRefused
    from optseq.state.sync.sync import SyncRefused, summary, sync

    from optseq.state.store.layout import holds_store
    from optseq.state.sync.gitrefs import check_remote, remote_url

    plan_dir = plan.resolve().parent if plan is not None else Path.cwd()
    new = not holds_store(db)
    try:
        if new:  # a refused sync makes no store: the remote is asked before the folder is made
            check_remote(plan_dir if plan_dir.is_dir() else Path.cwd(), remote_url(plan_dir, remote))
        with Store.open(db, mode="write", on_wait=lambda text: print(f"optseq: {text}", file=sys.stderr)) as store:
            result = sync(store, plan_dir, remote)
    except RemoteMissing as exc:
        print(f"optseq: sync: {exc}", file=sys.stderr)
        return BAD_INPUT
    except (SyncRefused, SegmentRefused, GitError) as exc:
        print(f"optseq: sync: {exc}", file=sys.stderr)
        return REFUSED
    print(summary(result))
    if new:  # a fresh checkout's first sync made the store, as any first write does: said on stderr
        from optseq.console.commands.store_cmd import new_store_line

        print(new_store_line(db), file=sys.stderr)
    return OK
