"""A writer's segment: the journal lines its store wrote since its last pushed segment, as they were journaled,
of its own records only (never what it imported), each naming its table (`t`) and, where it refers to a record
another writer made, that record's writer and id there (`x`). Read back, a segment is checked whole (its sha256
against its manifest, each line against the store's schema) before anything of it is written."""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import msgspec

from optseq.state.store.integrity import line_problem as frame_problem
from optseq.state.store.layout import HISTORY
from optseq.state.store.shape_check import line_problem as shape_problem, loads
from optseq.state.sync.idmap import REFS, IdMap
from optseq.state.sync.notes import Manifest

WRITER_EVENT = "sync_writer"
"""The event naming this store's writer in its journals (recover.py): never pushed."""

FORMAT = 1
SPLIT_BYTES = 5 * 1024 * 1024
"""A segment past this is split in several (one commit each): no file near a git host's 100 MiB limit
(OPTSEQ_TEST_SEGMENT_BYTES sets another, for a test that cannot write megabytes)."""


def dumps(line: dict[str, Any]) -> str:
    # ASCII only: the bytes hashed are the bytes git stores, whatever the locale's encoding of a pipe
    return json.dumps(line, ensure_ascii=True, separators=(",", ":"), sort_keys=True)


def local_lines(lines: list[tuple[str, dict[str, Any]]], ids: IdMap) -> list[str]:
    """The lines of `store.since(...)` this store's writer wrote, as a segment's lines: each journal line as the
    store gave it (its record pushed whole, keys this code does not name included), with its table and references."""
    out = []
    for table, line in lines:
        r = line.get("r") or {}
        op = line["op"]
        if (op != "u" and "origin" in r) or (op == "u" and "via" in r):
            continue  # imported: its writer pushed it
        if table == "events" and r.get("type") == WRITER_EVENT:
            continue  # this store's own bookkeeping (recover.py), no one else's history
        seg = {"t": table, "op": op, "id": line["id"], "r": r}
        for key in ("seq", "at"):
            if line.get(key) is not None:
                seg[key] = line[key]
        x: dict[str, Any] = {}
        if op == "u" and (owner := ids.origin(table, line["id"])):
            x["id"] = list(owner)
        for field, target in REFS.get(table, {}).items():
            value = r.get(field)
            if isinstance(value, list):
                named = [ids.origin(target, v) if isinstance(v, int) else None for v in value]
                if any(named):
                    x[field] = [list(n) if n else None for n in named]
            elif isinstance(value, int) and (owner := ids.origin(target, value)):
                x[field] = list(owner)
        if x:
            seg["x"] = x
        out.append(dumps(seg))
    return out


def split(lines: list[str]) -> list[list[str]]:
    limit = int(os.environ.get("OPTSEQ_TEST_SEGMENT_BYTES") or SPLIT_BYTES)
    parts: list[list[str]] = [[]]
    size = 0
    for line in lines:
        if parts[-1] and size + len(line) + 1 > limit:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line) + 1
    return [p for p in parts if p]


def text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def manifest(writer: str, n: int, body: str, count: int, seen: dict[str, int], ends: dict[str, int],
             through: int) -> dict[str, Any]:
    return {"format": FORMAT, "writer": writer, "n": n, "count": count,
            "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(), "seen": seen, "ends": ends,
            "through": through}


class SegmentRefused(Exception):
    """A segment that is not what its writer wrote: one line naming the writer, the segment and the record."""


class _Came(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A manifest as a remote gave it, before its check: any value in any field (a writer's bug, a hand edit)."""
    writer: object = None
    n: object = None
    count: object = None
    sha256: object = None
    seen: object = None


def checked(writer: str, commit: str, manifest: dict[str, Any], raw: bytes,
            expect_n: int) -> tuple[Manifest, list[dict[str, Any]]]:
    """The segment's manifest and its lines, parsed and checked; SegmentRefused naming what is wrong. The lines are
    given as parsed (dicts): each is written whole."""
    came = msgspec.convert(manifest, _Came)
    n = came.n
    where = f"writer {writer}'s segment {n if isinstance(n, int) else '?'} (commit {commit[:12]})"
    if came.writer != writer or n != expect_n:
        raise SegmentRefused(f"{where}: its manifest says writer {came.writer!r} segment {n!r}, "
                             f"where segment {expect_n} of {writer} comes next; refused, nothing of it imported")
    if hashlib.sha256(raw).hexdigest() != came.sha256:
        raise SegmentRefused(f"{where}: its bytes do not match the sha256 of its manifest (changed after it was "
                             "written); refused, nothing of it imported")
    if not isinstance(came.seen, dict):
        raise SegmentRefused(f"{where}: its manifest has no `seen` vector; refused, nothing of it imported")
    out = []
    for i, text_line in enumerate(raw.split(b"\n")[:-1], 1):
        try:
            line = loads(text_line)  # as the journal parses its lines (msgspec's decoder, json's where it refuses)
        except ValueError:
            raise SegmentRefused(f"{where}, line {i}: not JSON; refused, nothing of it imported") from None
        problem = frame_problem(line)
        table = line.get("t") if isinstance(line, dict) else None
        if problem is None:
            problem = shape_problem(table, line) if isinstance(table, str) and table in HISTORY else \
                f"table {table!r} is none of {', '.join(HISTORY)}"
        if problem is None and not isinstance(line.get("x", {}), dict):
            problem = "its references (x) are not an object"
        if problem:
            raise SegmentRefused(f"{where}, line {i}: {problem}; refused, nothing of it imported")
        out.append(line)
    if len(out) != came.count or not raw.endswith(b"\n") and raw:
        raise SegmentRefused(f"{where}: {len(out)} records where its manifest says {came.count}; "
                             "refused, nothing of it imported")
    return Manifest(writer=writer, n=expect_n, seen=came.seen), out


def resolve(ids: IdMap, me: str, writer: str, table: str, theirs: Any, named: Any) -> int | None:
    """The local id of a record a line refers to: `named` ([writer, id]) where the line says whose it is, else the
    line's own writer's record `theirs`."""
    if isinstance(named, list) and len(named) == 2:
        w, fid = named
    else:
        w, fid = writer, theirs
    if not isinstance(fid, int):
        return None
    return fid if w == me else ids.local(w, table, fid)
