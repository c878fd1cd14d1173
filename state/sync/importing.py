"""Other writers' segments into the local store: each writer's chain verified from what was imported, every new
segment checked, then all of them written in one store transaction (with the map of ids and the segments applied),
so a refusal or a kill leaves the store as it was and a re-run imports nothing twice."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from optseq.state.sync import gitrefs
from optseq.state.sync.conflicts import holder, yields_to
from optseq.state.sync.idmap import REFS, IdMap
from optseq.state.sync.notes import Applied, Decided, Kept, Manifest, decided
from optseq.state.sync.segments import SegmentRefused, checked, resolve

Pending = tuple[str, str, Manifest, list[dict[str, Any]]]
"""(writer, commit, manifest, lines) of a segment to apply: its lines as they came, each written whole."""


def gather(repo: Path, state: Kept, fetched: dict[str, str], me: str) -> list[Pending]:
    """Every new segment of every other writer, checked; SegmentRefused naming the first that is not sound."""
    out: dict[str, list[Pending]] = {}
    had = state.applied
    for writer, tip in sorted(fetched.items()):
        if writer == me:
            continue
        was = had.get(writer) or Applied()
        commits = gitrefs.chain(repo, was.commit, tip)
        if commits is None:
            raise SegmentRefused(f"writer {writer}'s ref was rewritten by someone (its tip {tip[:12]} does not descend "
                                 f"from {str(was.commit)[:12]}, which this store imported); refused, nothing "
                                 "of it imported")
        n = was.n
        for commit in commits:
            n += 1
            try:
                manifest, raw = gitrefs.read_commit(repo, commit)
            except ValueError as exc:
                raise SegmentRefused(f"writer {writer}'s segment {n} (commit {commit[:12]}): {exc}; refused, nothing "
                                     "of it imported") from None
            out.setdefault(writer, []).append((writer, commit, *checked(writer, commit, manifest, raw, n)))
    return causal(out, state, me)


def causal(pending: dict[str, list[Pending]], state: Kept, me: str) -> list[Pending]:
    """The segments in an order where each comes after every segment its writer had seen (its `seen`): a reference
    to another writer's record then finds it. Segments whose seen names one this remote lacks come last."""
    done = {w: a.n for w, a in state.applied.items()}
    order: list[Pending] = []
    while any(pending.values()):
        for writer, queue in sorted(pending.items()):
            if queue and all(done.get(w, 0) >= int(n) for w, n in queue[0][2].seen.items()
                             if w not in (me, writer) and isinstance(n, int)):
                order.append(queue.pop(0))
                done[writer] = done.get(writer, 0) + 1
                break
        else:
            for queue in pending.values():
                order.extend(queue)
                queue.clear()
    return order


def apply(store, state: Kept, ids: IdMap, segments: list[Pending], me: str, say=lambda text: None,
          written: list | None = None) -> tuple[dict[str, list[int]], dict[str, Applied]]:
    """Write the segments' records (inside the caller's batch), emptying `segments`; returns {writer: [segments,
    records]} and the sync document's `applied` with them. `say` is told each segment as it is merged (sync's
    progress); `written` gains each line as the store wrote it, (table, line) as `store.since` gives them (what the
    lever machine follows: sync.py)."""
    counts: dict[str, list[int]] = {}
    holders: dict[str, Decided | None] = {}
    """Per lever, the decision it holds as this sync goes (conflicts.yields_to)."""
    through = state.pushed.through
    applied = dict(state.applied)
    merged, total = 0, len(segments)
    segments.reverse()
    for done in range(1, total + 1):
        # each segment's parsed lines let go once merged (the store holds its own copies): a first sync of 100,000
        # runs holds a million of them
        writer, commit, manifest, lines = segments.pop()
        merged += len(lines)
        say(f"merging segment {done} of {total} ({writer}'s {manifest.n}): {merged} records merged")
        n, seen = manifest.n, manifest.seen
        for i, line in enumerate(lines, 1):
            # a line segments.checked checked against the store's schema, its record (`r`) written whole
            table, op, x = line["t"], line["op"], line.get("x") or {}
            r = dict(line.get("r") or {})
            for field, target in REFS.get(table, {}).items():
                value = r.get(field)
                if isinstance(value, list):
                    named = x.get(field) or [None] * len(value)
                    r[field] = [_must(resolve(ids, me, writer, target, v, nm), writer, n, i, target, v)
                                for v, nm in zip(value, named)]
                elif isinstance(value, int) and not isinstance(value, bool):
                    r[field] = _must(resolve(ids, me, writer, target, value, x.get(field)), writer, n, i, target, value)
            if op == "u":
                rid = _must(resolve(ids, me, writer, table, line["id"], x.get("id")), writer, n, i, table, line["id"])
                changed = store.update(table, rid, {**r, "via": writer})
                if written is not None:
                    written.append((table, {"op": "u", "id": rid, "r": {k: v for k, v in changed.items()
                                                                         if k != "id"}}))
            elif ids.local(writer, table, line["id"]) is None:  # held already: a sync killed before it noted the segment
                origin = {"writer": writer, "id": line["id"], "at": line.get("at")}
                coming, held = None, None
                if table == "decisions":  # what the conflict check reads (conflicts.py)
                    origin.update(n=n, seen=seen)
                    coming = decided({**r, "origin": origin})
                    lever = str(coming.lever)
                    if lever not in holders:  # once a lever a sync: a first sync of a long history is all decisions
                        holders[lever] = holder(store, lever)
                    held = yields_to(me, through, holders[lever], coming)
                    r = {**r, "yields": held} if held is not None else r
                # the record as its writer wrote it, keys this code does not name included, and where it came from
                stored = store.append(table, {**r, "origin": origin}, elsewhere=writer)
                if coming is not None and held is None and not coming.yields and coming.source != "plan":
                    holders[str(coming.lever)] = decided(stored)
                ids.add(writer, table, line["id"], stored["id"])
                if written is not None:
                    fields = {k: v for k, v in stored.items() if k not in ("id", "seq", "at")}
                    written.append((table, {"op": "i", "id": stored["id"], "seq": stored["seq"], "at": stored["at"],
                                            "r": fields}))
        applied[writer] = replace(applied.get(writer) or Applied(), n=n, commit=commit)
        counts.setdefault(writer, [0, 0])
        counts[writer][0] += 1
        counts[writer][1] += len(lines)
    return counts, {writer: replace(was, ids=ids.of(writer)) for writer, was in applied.items()}


def _must(found: int | None, writer: str, n: int, i: int, table: str, theirs: Any) -> int:
    if found is None:
        raise SegmentRefused(f"writer {writer}'s segment {n}, line {i}: refers to record {theirs} of {table}, which "
                             "no segment this store imported holds; refused, nothing imported")
    return found
