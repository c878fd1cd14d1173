"""The store's own working rows as types: a run in flight (`Active`, the hot file's `active` table), what an open
found of one whose process is gone (`Recovered`), and the hot file's meta record (`Meta`), decoded once where they
are read and read by attribute.

shapes.py checks each of these rows as the store reads the hot file (ActiveRow, and schema.py with
integrity.meta_problem for the meta), so a decode here never meets a shape it did not pass: these types are the
readers' view of a row, not its schema. As record_types.py does for the history, a field absent and a field stored
as null read the same, and keys not named here stay in the stored row, never on the Struct. Writes still build the
row as a dict, so the stored bytes are what they were.
"""

from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec


class Active(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A run in flight (inflight.py): what recovery needs to find its process, or its cluster job, again."""
    run: int
    lever: str | None = None
    pid: int | None = None
    pgid: int | None = None
    submission_id: str | None = None
    detached: bool = False  # its optseq died while a cluster ran it: it goes on there, unfollowed
    from_journal: bool = False  # read back from the runs journal: its pid is history's (inflight.FROM_JOURNAL)
    elsewhere: str | None = None  # the writer whose machine runs it (a sync brought it: inflight.ELSEWHERE)


class Recovered(msgspec.Struct, frozen=True):
    """A run an open found in flight with its process gone, as recover_interrupted left it: `interrupted`, or
    `detached` where a cluster still runs it under `submission_id`."""
    id: int
    status: str
    lever: str | None = None
    pid: int | None = None
    pgid: int | None = None
    submission_id: str | None = None


class Seq(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """The meta record's last seq alone: every write takes the next (decoding a field skips the others unread)."""
    seq: int = 0


class Ids(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """The meta record's last id of each table alone: every insert takes the next, every update checks its id."""
    ids: dict[str, int] = {}


class Ends(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Each journal's committed end alone, in bytes: what every read asks first."""
    ends: dict[str, int] = {}


class Counters(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """What each write and read asks of the hot file's meta record: its counters, each journal's committed end and
    where the indexes reach. Decoding it skips the rest unread: the late lines' index grows with the history, and
    a write asks for a seq and an id every time (a sync imports thousands in one batch)."""
    schema_version: int = 0
    seq: int = 0
    ids: dict[str, int] = {}
    ends: dict[str, int] = {}
    indexed: dict[str, int] | None = None  # none where no writer kept indexes yet: every journal counts as kept


class Meta(Counters, frozen=True):
    """The hot file's meta record whole: besides its Counters, each journal's checksum and stat and the indexes
    kept up to its end (the keys' meanings are where they are written: transaction.py, integrity.py, settled.py,
    inflight.py), as a commit, an open's check and a stream read them."""
    sums: dict[str, int] | None = None  # none in a store from before checksums: its first write adds them
    stamps: dict[str, list[int]] | None = None
    late: dict[str, dict[str, list[int]]] | None = None  # none, or no table, where the writer kept no late lines
    heads: dict[str, dict[str, int]] = {}
    last_at: str | None = None
    rebuilt_at: str | None = None
    inflight_checked: str | None = None


def active(row: Mapping[str, Any]) -> Active:
    """A row of the hot file's `active` table (checked by shapes.ActiveRow as the file was read) as an Active."""
    return msgspec.convert(row, Active)


K = TypeVar("K", Seq, Ids, Ends)


def part(doc: Mapping[str, Any], kind: type[K]) -> K:
    """One field of the hot file's meta record (checked with the rest of it), as the small Struct that names it."""
    return msgspec.convert(doc, kind)


def counters(doc: Mapping[str, Any]) -> Counters:
    """The hot file's meta record's counters and ends (checked with the rest of it) as Counters."""
    return msgspec.convert(doc, Counters)


def meta(doc: Mapping[str, Any]) -> Meta:
    """The hot file's meta record (checked by schema.py and integrity.meta_problem) as a Meta."""
    return msgspec.convert(doc, Meta)


__all__ = ["Active", "Recovered", "Seq", "Ids", "Ends", "Counters", "Meta", "active", "part", "counters", "meta"]
