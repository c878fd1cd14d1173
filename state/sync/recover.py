"""A store whose hot file was rebuilt (`optseq doctor --rebuild`) has lost its `sync` document; its private
repository may have too (`.optseq/sync.git` deleted with it). The writer's name is in the journals (a `sync_writer`
event, written with the store's first sync and never pushed) and in the private repository's config; the tip of each
writer it imported under `refs/optseq/imported/`, else found on the fetched chains from the records it holds (each
imported record carries its origin). From those the document is made again, and what this writer pushed is found on
the remote (sync.py's adoption), so a rebuilt store imports nothing twice, pushes nothing again and stays the same
writer."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from optseq.state.code.git import GitError, git
from optseq.state.store.layout import HISTORY
from optseq.state.sync import gitrefs
from optseq.state.sync.idmap import IdMap
from optseq.state.sync.notes import NO_ORIGIN, Applied, Imported, Kept, Manifest, WriterNote
from optseq.state.sync.segments import WRITER_EVENT

WRITER_KEY = "optseq.writer"


class _Frame(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    t: str | None = None
    op: str | None = None
    id: int | None = None


_frame = msgspec.json.Decoder(_Frame).decode


def _imported(record: dict[str, Any]) -> Imported:
    return msgspec.convert(record, Imported)


def _note(record: dict[str, Any]) -> WriterNote:
    return msgspec.convert(record, WriterNote)


def journaled_writer(store) -> str | None:
    """The writer this store's journals name (its own `sync_writer` event, not one another writer made)."""
    found = [e for e in map(_note, store.all("events")) if e.type == WRITER_EVENT and e.origin is None]
    return (found[-1].writer or None) if found else None


def journal_writer(store, writer: str) -> tuple[str, dict]:
    """Inside the caller's batch, with the sync document that names the same writer; the line as the journal has it
    (for a sync that follows its merge with the lever machine)."""
    stored = store.append("events", {"type": WRITER_EVENT, "writer": writer})
    return "events", {"op": "i", "id": stored["id"], "seq": stored["seq"], "at": stored["at"],
                      "r": {"type": WRITER_EVENT, "writer": writer}}


def remember_writer(repo: Path, writer: str) -> None:
    git(repo, "config", WRITER_KEY, writer)


def remembered_writer(repo: Path) -> str | None:
    try:
        return git(repo, "config", "--get", WRITER_KEY, ok=(0, 1)) or None
    except GitError:
        return None


def recovered(store, repo: Path, writer: str) -> Kept:
    """The sync document made again from the private repository and the records' origins."""
    applied: dict[str, Applied] = {}
    for other, commit in gitrefs.refs(repo, gitrefs.IMPORTED).items():
        manifest, _ = gitrefs.read_commit(repo, commit)
        # a segment this store imported, so its manifest was checked then
        applied[other] = Applied(n=msgspec.convert(manifest, Manifest).n, commit=commit)
    ids = IdMap({})
    for table in HISTORY:
        for record in map(_imported, store.all(table)):
            origin = record.origin
            if origin is not None and origin.id is not None and origin.writer in applied:
                ids.add(origin.writer, table, origin.id, record.id)
    return Kept(writer=writer, applied={other: replace(was, ids=ids.of(other)) for other, was in applied.items()})


def held_segments(store, repo: Path, state: Kept, fetched: dict[str, str], me: str) -> Kept:
    """Writers whose records the store holds but whose segments it has no note of (its private repository was lost
    with the hot file): the segments it holds are noted as applied, each writer's chain read from its root. Every
    segment a sync imported was written in one transaction with all before it, so they are a prefix of the chain:
    up to the last segment whose inserts are here (one holding only updates past it is applied again, as after a
    sync killed before its note; an update sets what it set before). The document with those segments noted."""
    ids = IdMap(state.applied)
    holders: set[str] = set()
    for table in HISTORY:
        for record in map(_imported, store.all(table)):
            origin = record.origin or NO_ORIGIN
            writer = origin.writer
            if writer is not None and writer in fetched and writer not in state.applied and writer != me \
                    and origin.id is not None:
                ids.add(writer, table, origin.id, record.id)
                holders.add(writer)
    applied = dict(state.applied)
    for writer in sorted(holders):
        n, commit = 0, None
        for i, c in enumerate(gitrefs.chain(repo, None, fetched[writer]) or [], 1):
            _, raw = gitrefs.read_commit(repo, c)
            # the segment's frame only (which table, which id): its chain is its writer's, read again from its root
            inserts = [line for line in map(_frame, raw.splitlines()) if line.op != "u"]
            if any(line.t is not None and line.id is not None and ids.local(writer, line.t, line.id) is not None
                   for line in inserts):
                n, commit = i, c
            elif inserts:
                break
        if commit is not None:
            applied[writer] = Applied(n=n, commit=commit, ids=ids.of(writer))
            gitrefs.keep_ref(repo, f"{gitrefs.IMPORTED}{writer}", commit)
    return replace(state, applied=applied)
