"""Decisions on one lever made concurrently: neither writer had seen the other's when it decided. Said from what
each writer had seen (the `seen` vector of the segment that carried a decision, and for this store's own decisions
the local order), never from the clocks, which may disagree by days. Which of the two the lever holds must be the
same in every store, whatever order their syncs brought them in: the later by its writer's clock, the writer's id
breaking a tie. A foreign decision that loses is stored marked `yields` (the local id of the one it yields to) and
moves no lever (lifecycle/moves.py); a conflict stands until a decision made after both (which saw both) follows it."""
from __future__ import annotations

import sys
from bisect import bisect_left
from typing import Any

from msgspec.structs import replace

from optseq.state.sync.notes import Decided, Last, decided, kept

KEPT = "sync"
"""The hot file's document of this store's sync (Store.keep): its writer, what it pushed, what it imported.
`status` reads it here, without the sync's own imports (git, the segments)."""


def conflicts(store) -> list[dict[str, Any]]:
    """[{lever, holds: decision, other: decision}] with each decision's {id, outcome, why, writer, at}."""
    state = kept(store, KEPT)
    if state is None or not state.applied:
        return []
    me, through = state.writer, state.pushed.through
    recent = store.recent("decisions")
    if recent is not None:
        groups = [[decided(d) for d in g["last"]] for g in recent.values()]
    else:
        by_lever: dict[str, list[Decided]] = {}
        for record in store.all("decisions"):
            d = decided(record)
            by_lever.setdefault(str(d.lever), []).append(d)
        groups = list(by_lever.values())
    out = []
    for decisions in groups:
        made = sorted((d for d in decisions if d.source != "plan"), key=lambda d: d.seq or 0)
        holding = [d for d in made if not d.yields]
        if len(made) < 2 or not holding:
            continue
        last = holding[-1]
        for other in reversed([d for d in made if d is not last]):
            if not _saw(last, other, me, through) and not _saw(other, last, me, through):
                out.append({"lever": last.lever, "holds": _said(last, me), "other": _said(other, me)})
                break
    return out


def holder(store, lever: str) -> Decided | None:
    """The decision the lever holds now, as the store has it (None for none): the latest not yielding."""
    chain = store.lever_records("decisions", lever)
    held = [d for d in map(decided, store.find("decisions", lever=lever) if chain is None else chain)
            if d.source != "plan" and not d.yields]
    return max(held, key=lambda d: d.seq or 0) if held else None


def yields_to(me: str, through: list[int], held: Decided | None, incoming: Decided) -> int | None:
    """The local id of the decision `held` (the one the lever holds) a foreign decision being imported yields to:
    where neither writer had seen the other's and `held` is the later by its writer's clock (then by writer id);
    None where the incoming decision holds (it saw the other, or it is the later). `me` and `through` are the sync
    document's writer and the seqs its pushed segments reached."""
    if held is None:
        return None
    coming = replace(incoming, seq=sys.maxsize)  # not stored yet: after everything this store holds
    if _saw(coming, held, me, through) or _saw(held, coming, me, through):
        return None
    return held.id if _order(held, me) > _order(coming, me) else None


def _order(d: Decided, me: str) -> tuple[str, str]:
    return str(_at(d) or ""), _writer(d, me)


def _writer(d: Decided, me: str) -> str:
    return d.came.writer or me


def _at(d: Decided) -> str | None:
    return d.came.at or d.at


def _saw(x: Decided, y: Decided, me: str, through: list[int]) -> bool:
    """Whether the writer of decision x had seen decision y when it made x."""
    wx, wy = _writer(x, me), _writer(y, me)
    if wx == wy or wx == me:  # one writer's history is sequential; this store saw what it held before x
        return (y.seq or 0) < (x.seq or 0)
    n_y: int | None
    if wy == me:  # this store's segment that carried y: the first whose `through` reaches y's seq
        k = bisect_left(through, y.seq or 0)
        n_y = k + 1 if k < len(through) else None
    else:
        n_y = y.came.n
    seen = x.came.seen or {}
    return n_y is not None and int(seen.get(wy) or 0) >= int(n_y)


def _said(d: Decided, me: str) -> dict[str, Any]:
    return {"id": d.id, "outcome": d.outcome, "why": d.why, "writer": _writer(d, me), "at": _at(d)}


def lines(found: list[dict[str, Any]]) -> list[str]:
    """What `status` prints of each conflict."""
    out = []
    for c in found:
        h, o = c["holds"], c["other"]
        out.append(f"conflict: {c['lever']} was decided concurrently: #{h['id']} {h['outcome']} by {h['writer']} "
                   f"({h['why'] or 'no rationale'}) and #{o['id']} {o['outcome']} by {o['writer']} "
                   f"({o['why'] or 'no rationale'}); neither had seen the other's; it holds {h['outcome']} (the "
                   f"later by its writer's clock, in every store) until someone decides again")
    return out


def since_sync(store) -> dict[str, Any] | None:
    """How far the store is from its last sync: {writer, at, remote, records} (records written since, by anyone
    here: what the next sync pushes or has already merged); None for a store that never synced."""
    state = kept(store, KEPT)
    if state is None:
        return None
    last, now = state.last or Last(), store.meta().seq
    return {"writer": state.writer, "at": last.at, "remote": last.remote, "records": max(0, now - (last.seq or 0))}


def since_line(found: dict[str, Any]) -> str:
    n = found["records"]
    if not found["at"]:
        return f"not synced yet as {found['writer']}: {n} records written here wait for optseq sync"
    return (f"last sync: {found['at']} with {found['remote']} as {found['writer']}; "
            + (f"{n} record{'s' if n != 1 else ''} written here since (optseq sync shares them)" if n
               else "nothing written here since"))


def last_remote(store) -> str | None:
    """The remote this store last synced with, as `optseq sync REMOTE` kept it (a remote's name, or an absolute path
    or URL); None where none is on record: what the console's S syncs with, before its default."""
    state = kept(store, KEPT)
    return (state.remote or None) if state else None
