"""`optseq sync`: this store's new records pushed as one segment on its writer's own ref, every other writer's new
segments fetched and merged in; all through the store's private bare repository (gitrefs.py).

The steps, each safe to be killed after (OPTSEQ_TEST_KILL_AT names one, as the rebuild's do):
  sync-fetched   the remote's writers' refs are in the private repository; nothing local changed
  sync-built     this store's segment is a commit there, not yet pushed nor recorded (the next sync builds it again)
  sync-imported  the other writers' segments are in the store, with what was imported (one transaction)
  sync-pushed    the segment is on the remote, not yet recorded: the next sync finds it there and records it
Only one sync of a store runs at a time (`sync.lock`); the store's own lock is held for its transactions only.
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import msgspec
from msgspec.structs import replace

from optseq.state import flock
from optseq.state.store.aside import step
from optseq.state.store.records import utc_now
from optseq.state.sync import gitrefs
from optseq.state.sync.conflicts import KEPT
from optseq.state.sync.idmap import IdMap
from optseq.state.sync.importing import apply, gather
from optseq.state.sync.notes import Kept, Last, Made, Pushed, doc, kept
from optseq.state.sync.recover import (held_segments, journal_writer, journaled_writer, recovered, remember_writer,
                                      remembered_writer)
from optseq.state.sync.segments import SegmentRefused, local_lines, manifest, split, text

PUSH_TRIES = 5


class SyncRefused(Exception):
    """A sync that could not finish: one line (a refused segment, a refused push); exit 1."""


@dataclass
class Result:
    writer: str
    remote: str
    pushed: list[int] = field(default_factory=list)
    """Records in each segment pushed now."""
    fetched: dict[str, list[int]] = field(default_factory=dict)
    """{writer: [segments, records]} imported now."""
    adopted: int = 0
    """Segments a killed sync had pushed and not recorded, recorded now."""
    seconds: float = 0.0


def writer_id() -> str:
    """A new writer's name: the machine's (or OPTSEQ_WRITER), made unique."""
    name = os.environ.get("OPTSEQ_WRITER") or os.uname().nodename.split(".")[0] or "writer"
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40].strip("-") or "writer"
    return f"{name}-{secrets.token_hex(4)}"


def fresh_state(writer: str) -> Kept:
    return Kept(writer=writer)


def sync(store, plan_dir: Path, remote: str, progress: Callable[[str], None] | None = None,
         follow: Callable[[list], None] | None = None) -> Result:
    """One sync (see the module docstring). RemoteMissing (exit 2), SyncRefused or SegmentRefused (one line).
    `progress` is told each step in a few words (the console shows them: a large history's first sync takes a while).
    `follow` is handed the lines imported, inside their transaction (the sequencer keeps its snapshot there: else
    the next command replays what a first sync brought, the whole history)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    directory = Path(store.directory).resolve()
    with flock.held(directory / "sync.lock", mode=0o666):
        url = gitrefs.remote_url(plan_dir, remote)
        borrowed = gitrefs.access(plan_dir)  # how the plan's repository reaches its remote (CI's auth header)
        repo = gitrefs.private(directory)
        store.refresh()
        found = kept(store, KEPT)  # decoded once: each step below replaces the parts it changes, kept by doc()
        remade = found is None
        if found is None:  # a first sync, or a hot file rebuilt from the journals (its private repository lost too)
            known = remembered_writer(repo) or journaled_writer(store)
            found = recovered(store, repo, known) if known else fresh_state(writer_id())
            found = replace(found, journaled=journaled_writer(store) == found.writer)
            remember_writer(repo, found.writer)
            with store.batch():
                store.keep(KEPT, doc(found))
        state: Kept = found
        me = state.writer
        result = Result(me, remote)
        say(f"fetching the writers' refs from {remote}")
        fetched = gitrefs.fetch(repo, url, borrowed)
        step("sync-fetched")
        if remade:
            state = held_segments(store, repo, state, fetched, me)
        result.adopted, pushed = _adopt(repo, state, fetched.get(me), remote)
        state = replace(state, pushed=pushed)
        tips, ends = _build(store, repo, state, me)
        step("sync-built")
        say(f"checking the new segments of {len([w for w in fetched if w != me])} other writers")
        segments = gather(repo, state, fetched, me)  # all checked before anything is written
        ids = IdMap(state.applied)
        with store.batch():
            untouched = store.ends() == ends  # nothing written here since _build read the journals
            if not state.journaled and state.pushed.n:  # pushed before its writer was journaled
                journal_writer(store, me)
                state = replace(state, journaled=True)
            written: list = []
            result.fetched, applied = apply(store, state, ids, segments, me, say, written)
            state = replace(state, applied=applied)
            if follow is not None and written:
                say(f"following {len(written)} records merged")
                follow(written)
            imported = store.meta().seq
            # a sync is the last one once nothing of this store's waits: here, or after its push below
            last = Last(at=utc_now(), remote=url, seq=imported)
            if not tips:  # every line up to `ends` was another writer's: the next sync reads from there
                state = replace(state, pushed=replace(state.pushed, ends=ends))
            # the remote as the console's S finds it again: a remote's name, or a path or URL made absolute
            state = replace(state, remote=remote if gitrefs.is_name(remote) else url)
            store.keep(KEPT, doc(state if tips else replace(state, last=last)))
        for writer in result.fetched:
            gitrefs.keep_ref(repo, f"{gitrefs.IMPORTED}{writer}", str(state.applied[writer].commit))
        step("sync-imported")
        if not tips and untouched and result.fetched:
            _past_import(store, imported)
        if tips:
            say(f"pushing {len(tips)} segment{'s' if len(tips) != 1 else ''} "
                f"({sum(made.count for _, made in tips)} records) to {gitrefs.WRITERS}{me}")
            _push(repo, url, tips[-1][0], me, remote, borrowed)
            step("sync-pushed")
            for commit, made in tips:
                state = replace(state, pushed=_pushed(state.pushed, commit, made))
                result.pushed.append(made.count)
            store.refresh()
            now = kept(store, KEPT) or state
            with store.batch():
                if not now.journaled:  # its first push: the writer it pushed as, where a rebuild finds it
                    line = journal_writer(store, me)
                    last = replace(last, seq=(last.seq or 0) + 1)  # its line is no record waiting for a sync
                    if follow is not None and written:  # the snapshot the merge kept covers this line too
                        follow([line])
                store.keep(KEPT, doc(replace(now, pushed=state.pushed, last=last, remote=state.remote,
                                             journaled=True)))
        result.seconds = time.monotonic() - started
        return result


def _build(store, repo: Path, state: Kept, me: str) -> tuple[list[tuple[str, Made]], dict]:
    """This store's records since its last pushed segment, as commits on its writer's chain (not yet pushed)."""
    store.refresh()
    pushed = state.pushed
    ends, through = store.ends(), store.meta().seq
    lines = local_lines(store.since(pushed.ends), IdMap(state.applied))
    seen = {w: a.n for w, a in state.applied.items()}
    parent, n, out = pushed.commit, pushed.n, []
    for part in split(lines):
        n += 1
        body = text(part)
        made = manifest(me, n, body, len(part), seen, ends, through)
        parent = gitrefs.commit_segment(repo, parent, made, body)
        out.append((parent, msgspec.convert(made, Made)))
    return out, ends


def _past_import(store, imported: int) -> None:
    """The next sync reads its journals from past the lines this one imported, when nothing was written since:
    else its first step reads every imported line again only to skip it (a whole history after a first sync).
    Every line written takes a seq, so an unchanged seq says the journals end where the import left them."""
    with store.batch():
        state = kept(store, KEPT)
        if state and store.meta().seq == imported:
            store.keep(KEPT, doc(replace(state, pushed=replace(state.pushed, ends=store.ends()))))


def _adopt(repo: Path, state: Kept, tip: str | None, remote: str) -> tuple[int, Pushed]:
    """Segments of this writer on the remote that the store has not recorded (a sync killed after its push):
    recorded now, so they are not built again (how many, and the `pushed` part that records them). A ref of this
    writer that does not descend from what it pushed was rewritten: refused."""
    pushed = state.pushed
    if tip is None or tip == pushed.commit:
        return 0, pushed
    commits = gitrefs.chain(repo, pushed.commit, tip)
    if commits is None:
        raise SyncRefused(f"this store's own ref {gitrefs.WRITERS}{state.writer} on {remote} was rewritten by "
                          f"someone (its tip {tip[:12]} does not descend from {str(pushed.commit)[:12]}, which this "
                          "store pushed; or a copy of this store pushes as the same writer); refusing to sync so "
                          "nothing is lost")
    for commit in commits:
        made, _ = gitrefs.read_commit(repo, commit)
        pushed = _pushed(pushed, commit, msgspec.convert(made, Made))
    return len(commits), pushed


def _pushed(pushed: Pushed, commit: str, made: Made) -> Pushed:
    """The sync document's `pushed` part once `made` is on the remote."""
    return Pushed(n=made.n, commit=commit, ends=made.ends, through=[*pushed.through, made.through])


def _push(repo: Path, url: str, commit: str, me: str, remote: str, env: dict[str, str]) -> None:
    """Never forced; a push that loses a race for the remote's lock is tried again, a bounded number of times."""
    why = None
    for attempt in range(PUSH_TRIES):
        why = gitrefs.push(repo, url, commit, me, env)
        if why is None:
            return
        if "hook declined" in why or "non-fast-forward" in why or "fetch first" in why:
            break
        time.sleep(0.05 * (attempt + 1))  # a lock another process holds for milliseconds
    raise SyncRefused(f"remote {remote} refused the push of {gitrefs.WRITERS}{me}: {why}; the segment stays here "
                      "for the next sync (what was fetched is merged)")


def summary(result: Result) -> str:
    pushed = (f"pushed {len(result.pushed)} segment{'s' if len(result.pushed) != 1 else ''} "
              f"({sum(result.pushed)} records) to {gitrefs.WRITERS}{result.writer}" if result.pushed
              else f"nothing new to push ({gitrefs.WRITERS}{result.writer})")
    if result.fetched:
        parts = [f"{w} {s} segment{'s' if s != 1 else ''} ({r} records)" for w, (s, r) in sorted(result.fetched.items())]
        got = f"fetched {len(result.fetched)} writer{'s' if len(result.fetched) != 1 else ''}: {', '.join(parts)}"
    else:
        got = "nothing new from other writers"
    return f"{pushed}; {got} ({result.seconds:.2f} s)"
