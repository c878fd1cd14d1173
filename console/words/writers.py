"""Which writer a record came from (optseq sync): a record imported from another writer's store carries
`origin: {writer, id, ...}` (state/sync/importing.py), its id there differing from its id here."""
from __future__ import annotations

HERE = "this store"
"""The writer column's word for a record written here."""


def writer_of(record: dict) -> str | None:
    """The other writer a record came from; None for one written in this store."""
    return _writer(record.get("origin"))


def _writer(origin: object) -> str | None:
    return origin.get("writer") if isinstance(origin, dict) and origin.get("writer") else None


def origin_text(record: dict, noun: str) -> str:
    """`ci-3f2a: run 4` (the writer and the record's id in its store), '' for a record written here."""
    return came_from(record.get("origin"), noun)


def came_from(origin: dict | None, noun: str) -> str:
    """origin_text of a record read as a type (its `origin`, the one part of it read here)."""
    writer = _writer(origin)
    return f"{writer}: {noun} {origin.get('id')}" if writer and origin else ""


def writer_cell(record: dict) -> str:
    """The runs table's writer column: `ci-3f2a run 4`, or `this store`."""
    writer = writer_of(record)
    return f"{writer} run {record['origin'].get('id')}" if writer else HERE
