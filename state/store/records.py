"""A record as the store keeps it: JSON-clean fields, the ones the store assigns, its one timestamp format."""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from optseq.state.store.storage import StoreError, dump
from optseq.state.text import clean_text, has_surrogate

RESERVED = ("id", "seq", "at")
"""Fields the store assigns; records passed in may not set them."""


class RecordNotFound(StoreError, LookupError):
    """No record with that id in that table."""


def utc_now() -> str:
    """ISO-8601 UTC time with seconds, the store's one timestamp format."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def clean(table: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A deep, JSON-normalised copy of a record, so later changes by the caller cannot reach the store."""
    if not isinstance(record, Mapping):
        raise TypeError(f"a record for {table!r} must be a mapping, not {type(record).__name__}")
    for key in record:
        if not isinstance(key, str):
            raise TypeError(f"a record for {table!r} has a non-string field name {key!r}")
        if key in RESERVED:
            raise ValueError(f"a record for {table!r} may not set {key!r}; the store assigns it")
    try:
        text = dump(record)
        copy = json.loads(text)
    except (TypeError, ValueError) as e:
        raise TypeError(f"a record for {table!r} is not JSON data: {e}") from None
    # the last line of defence for text: a lone surrogate would fail the UTF-8 write of the whole commit. The dump
    # spells every string of the record as it is (keys too), so a record whose dump holds none needs no walk
    return clean_text(copy) if has_surrogate(text) else copy


def replace_with(record: dict[str, Any]) -> Callable[[MutableMapping[str, Any]], None]:
    def replace(doc: MutableMapping[str, Any]) -> None:
        doc.clear()
        doc.update(record)
    return replace
