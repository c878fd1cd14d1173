"""The newest records of each history table, kept in the hot file as they are written: what the export reads
instead of the decisions and events journals, which grow with every run.

Per table, records are grouped by their lever, type and name (`key`), and each group keeps its count and its
newest `KEEP` records as the journal folds them (an insert, a replace, an update of one kept). The writer keeps
it in the same transaction as the lines, so it is as committed as they are; a table is either in it from its
first record on (a store's first write to it starts it; a store written before the digest existed gains it
on its first write to that table, from a whole read of it, once) or absent, and a reader of an absent table
reads the journal whole, as before. Its size follows the plan (levers, event types, fact names), not the history.
"""
from __future__ import annotations

from typing import Any

RECENT = "recent"
"""The hot file's table: one document per history table, {"table", "keys": {key: {"n", "last": [records]}}}."""
TABLES = ("decisions", "events", "criteria", "facts")
"""The tables kept (runs are the lever machine's: state/lifecycle/run_index.py)."""
KEEP = 12
"""Newest records per group: the export lists 10 earlier decisions per lever, beside the standing one."""


def key(record: dict[str, Any]) -> str:
    return "|".join(str(record.get(k) or "") for k in ("lever", "type", "name"))


def started(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The groups of a table read whole: what noting each record as it was written gives (a replaced record took
    a new seq when it was replaced, so seq order is the order they were last written in)."""
    keys: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.get("seq") or 0):
        noted(keys, record)
    return keys


def noted(keys: dict[str, dict[str, Any]], record: dict[str, Any], new: bool = True) -> None:
    """Fold one written record (with id, seq, at) in: a new one counts; a replaced one moves to the newest."""
    group = keys.setdefault(key(record), {"n": 0, "last": []})
    last = [r for r in group["last"] if r.get("id") != record["id"]]
    group["n"] += 1 if new else 0
    group["last"] = [*last, record][-KEEP:]


def updated(keys: dict[str, dict[str, Any]], rid: int, fields: dict[str, Any]) -> None:
    """An update of a record: changed where it is kept (its group, read from the kept copy, stays)."""
    for group in keys.values():
        group["last"] = [{**r, **fields} if r.get("id") == rid else r for r in group["last"]]


def sound(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("keys"), dict) and all(
        isinstance(g, dict) and isinstance(g.get("n"), int) and isinstance(g.get("last"), list)
        for g in doc["keys"].values())
