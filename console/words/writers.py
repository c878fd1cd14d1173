"""Which writer a record came from (optseq sync): a record imported from another writer's store carries
`origin: {writer, id, ...}` (state/sync/importing.py), its id there differing from its id here."""
from __future__ import annotations

HERE = "this store"
"""The writer column's word for a record written here."""


def writer_of(record: dict) -> str | None:
    """The other writer a record came from; None for one written in this store."""
    origin = record.get("origin")
    return origin.get("writer") if isinstance(origin, dict) and origin.get("writer") else None


def origin_text(record: dict, noun: str) -> str:
    """`ci-3f2a: run 4` (the writer and the record's id in its store), '' for a record written here."""
    writer = writer_of(record)
    return f"{writer}: {noun} {record['origin'].get('id')}" if writer else ""


def writer_cell(record: dict) -> str:
    """The runs table's writer column: `ci-3f2a run 4`, or `this store`."""
    writer = writer_of(record)
    return f"{writer} run {record['origin'].get('id')}" if writer else HERE
