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
        on_wait = lambda text: print(f"optseq: {text}", file=sys.stderr)  # noqa: E731
        seq = _sequencer(plan, db, on_wait)
        if seq is not None:  # the lever machine follows what is merged, its snapshot kept in the same transaction
            with seq:
                result = sync(seq.store, plan_dir, remote, follow=seq.imported)
        else:
            with Store.open(db, mode="write", on_wait=on_wait) as store:
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


def _sequencer(plan: Path | None, db: Path, on_wait):
    """The plan over the store, where the plan loads: a sync needs no plan (the store and a remote), but without one
    the first `status` after a large sync replays what it merged."""
    from optseq.state.plan.model import PlanError
    from optseq.state.sequencer import Sequencer

    if plan is None or not plan.is_file():
        return None
    try:
        return Sequencer.open(plan, db, mode="write", on_wait=on_wait)
    except PlanError:
        return None
