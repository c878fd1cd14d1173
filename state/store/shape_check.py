"""Checking records against the store's schema (shapes.py): where each is read (the hot file at its open, a journal
line as it is parsed) and before one is written, a wrong shape said as the table, the record and the field."""
from __future__ import annotations

import types
import typing
from typing import Any

import msgspec

from optseq.state.kinds import LeverState, RunStatus
from optseq.state.store.shapes import FIELDS, HOT, REQUIRED, SNAPSHOT_VERSION, Line, SnapshotData, Stored
from optseq.state.store.storage import StoreCorrupt


class RecordShapeError(StoreCorrupt):
    """A record whose bytes are sound but whose shape is not one a reader can use."""


# ---- checking ---------------------------------------------------------------------------------------------------

_DECODE = msgspec.json.Decoder()


def loads(text: bytes) -> Any:
    """A journal line parsed: msgspec's decoder (about 4× json.loads on a run's line), json.loads where it refuses
    what json.loads takes (NaN, which the store's json.dumps writes; an integer past 64 bits), so a store reads as
    it always has. ValueError (or UnicodeDecodeError) where it is not JSON."""
    try:
        return _DECODE.decode(text)
    except msgspec.DecodeError:
        import json

        return json.loads(text)


ENUMS = {"status": tuple(RunStatus), "state": tuple(LeverState), "outcome": ("pass", "fail"), "op": ("i", "u", "r"),
         "table": ("decisions", "events", "criteria", "facts")}
"""The values a field of an enum may take, said with a refusal of another (msgspec names the value only)."""


def _problem(value: Any, shape: Any, prefix: str = "") -> tuple[str, str] | None:
    """(field, problem) where `value` is not a `shape`, None where it is: one compiled convert for a sound value; a
    refused one is walked (_located) to the field it fails at."""
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError:
        field, problem = _located(value, shape, prefix)
        allowed = ENUMS.get(field.rsplit(".", 1)[-1]) if problem.startswith("invalid enum value") else None
        if allowed:
            problem = f"{problem} (one of {', '.join(allowed)})"
        return field, problem
    return None


def _located(value: Any, shape: Any, where: str) -> tuple[str, str]:
    """The field of `value` that makes it no `shape`, found by converting its parts one at a time against the parts
    of the type (a struct's fields in the record's order and then its missing ones, a dict's entries by key, a
    list's items): the path comes from the types, not from msgspec's wording. At the part that fails on its own,
    the problem is msgspec's message for that one value (no path in it, being at its root)."""
    fields = _struct_fields(shape, value)
    if fields is not None:
        for key, item in value.items():
            field = fields.get(key)
            if field is not None and _fails(item, field.type):
                return _located(item, field.type, f"{where}.{key}")
        for key, field in fields.items():
            if field.required and key not in value:
                return f"{where}.{key}".lstrip("."), "missing"
    parts = _parts(shape, value)
    if parts is not None:
        for name, item, part in parts:
            if _fails(item, part):
                return _located(item, part, where + name)
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as e:
        said = str(e)
        return where.lstrip("."), said[:1].lower() + said[1:]
    return where.lstrip("."), "not what its type allows"  # sound part by part: no part to blame


def _members(shape: Any) -> tuple[Any, ...]:
    return typing.get_args(shape) if typing.get_origin(shape) in (typing.Union, types.UnionType) else (shape,)


def _struct_fields(shape: Any, value: Any) -> dict[str, msgspec.structs.FieldInfo] | None:
    """The fields by name of the struct `shape` is (or has among its union's members) where `value` is an object."""
    if not isinstance(value, dict):
        return None
    for member in _members(shape):
        if isinstance(member, type) and issubclass(member, msgspec.Struct):
            return {f.encode_name: f for f in msgspec.structs.fields(member)}
    return None


def _parts(shape: Any, value: Any) -> list[tuple[str, Any, Any]] | None:
    """(where, part, its type) of a dict's entries or an array's items, as `shape` (or its union's member of that
    kind) types them; None where `value` is neither or the type has no such member."""
    for member in _members(shape):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if isinstance(value, dict) and origin is dict and len(args) == 2:
            return [(f".{key}", item, args[1]) for key, item in value.items()]
        if isinstance(value, list) and origin is list and len(args) == 1:
            return [(f"[{i}]", item, args[0]) for i, item in enumerate(value)]
        if isinstance(value, list) and origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return [(f"[{i}]", item, args[0]) for i, item in enumerate(value)]
        if isinstance(value, list) and origin is tuple and len(args) == len(value):
            return [(f"[{i}]", item, part) for i, (item, part) in enumerate(zip(value, args))]
    return None


def _fails(value: Any, shape: Any) -> bool:
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError:
        return True
    return False


LEVERLESS = ("compare", "screen", "confirm")
"""Run kinds of no one lever: a compare (two commits), a screen (several levers), a screen's confirmation."""


def record_problem(table: str, record: Any, whole: bool = True, prefix: str = "") -> tuple[str, str] | None:
    """(field, problem) of a history record's fields (a whole one needs REQUIRED), None when they are sound."""
    if not isinstance(record, dict):
        return prefix.lstrip(".") or "(record)", f"expected `object`, got `{_json_type(record)}`"
    found = _problem(record, FIELDS[table], prefix)
    if found:
        return found
    if whole:
        for name in REQUIRED[table]:
            if name not in record:
                return f"{prefix}.{name}".lstrip("."), "missing"
        if table == "runs" and record.get("kind") not in LEVERLESS and not isinstance(record.get("lever"), str):
            return f"{prefix}.lever".lstrip("."), ("missing (a run of no lever is a compare, a screen or a screen's "
                                                   "confirmation: `kind` says so)")
        if table == "events" and record.get("type") == "plan" and "path" not in record:
            return f"{prefix}.path".lstrip("."), "missing (a plan event names its plan's path)"
    return None


def line_problem(table: str, line: dict[str, Any]) -> str | None:
    """What makes a journal line of `table` not a record of it, as a line's problem says it (journal.py); None
    when it is one. The line's own frame (op, id, seq) was checked by integrity.line_problem."""
    found = _problem(line, Line)
    if found is None:
        r = line.get("r") or {}
        found = record_problem(table, r, whole=line["op"] != "u", prefix="r")
        if found is None and line["op"] != "u" and not isinstance(line.get("seq"), int):
            found = ("seq", "missing (a record's insert is numbered in the history's order)")
    if found is None:
        return None
    field, problem = found
    return f"record {line.get('id')} of {table}, field `{field}`: {problem}"


def hot_problem(data: dict[str, Any], version: int) -> str | None:
    """What makes the hot file's tables not the records readers use, naming table, record and field; None when
    they are. A version-1 file keeps the history tables too (schema.py migrates them)."""
    from optseq.state.store.layout import HISTORY

    for table, rows in data.items():
        shape = HOT.get(table)
        legacy = version == 1 and table in HISTORY
        if shape is None and not legacy:
            continue
        for doc_id, row in rows.items():
            if legacy:
                found = record_problem(table, row) or _problem(row, Stored)
            else:
                found = _problem(row, shape) or _nested(table, row)
            if found:
                field, problem = found
                return f"record {doc_id} of {table}, field `{field}`: {problem}"
    return None


def _nested(table: str, row: dict[str, Any]) -> tuple[str, str] | None:
    """The parts of a hot row whose shape depends on another field: a digest's copies (by their table), a
    snapshot's data (by its layout)."""
    if table == "recent":
        for key, group in row["keys"].items():
            for i, record in enumerate(group["last"]):
                found = record_problem(row["table"], record, prefix=f"keys.{key}.last[{i}]") \
                    or _problem(record, Stored, f"keys.{key}.last[{i}]")
                if found:
                    return found
    if table == "snapshot" and isinstance(row.get("data"), dict) and row["data"].get("version") == SNAPSHOT_VERSION:
        return _problem(row["data"], SnapshotData, "data")
    return None


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "str", bool: "bool", int: "int", float: "float",
            type(None): "null"}.get(type(value), type(value).__name__)


def refuse_written(table: str, record: dict[str, Any], whole: bool = True) -> None:
    """A record about to be written must be one the readers take: refused (ValueError naming the table and the
    field) before anything is written, so no bug of a writer makes a store every reader refuses."""
    if table in FIELDS:
        found = record_problem(table, record, whole=whole)
    elif table in HOT and whole:
        found = _problem({**record, "seq": 0, "at": ""}, HOT[table])
    else:
        found = None  # a hot row's update sets some of its fields: its next read checks the whole row
    if found:
        field, problem = found
        raise ValueError(f"a record for {table!r} has the wrong shape: field `{field}`: {problem}")

