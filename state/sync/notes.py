"""What sync reads to decide, as types: the origin it stamps on each record it imports, a decision as the conflict
check weighs it, the `sync` document it keeps in the hot file, a segment's manifest. Each is decoded once where it
is read and read by attribute; the sync document is written from its type too (`doc`), its keys in the order they
were always written. What sync passes on whole (a segment's lines, an imported record's fields) stays the store's
dict: it is written as it came, keys this code does not name included."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class _Read(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Keys not named here are other readers' (an older or newer optseq's too)."""


class Origin(_Read, frozen=True):
    """Where an imported record came from (importing.py writes it): its writer, its id and time there, and for a
    decision the segment that carried it (`n`) and what its writer had imported then (`seen`)."""
    writer: str | None = None
    id: int | None = None
    at: str | None = None
    n: int | None = None
    seen: dict[str, Any] | None = None  # a foreign manifest's vector, as its check let it through (an object)


NO_ORIGIN = Origin()


class Decided(_Read, frozen=True):
    """A decision as the conflict check weighs it (conflicts.py): record_types.Decision's fields it reads, absent
    ones None as a `.get` read them, and its origin typed."""
    id: int | None = None
    seq: int | None = None
    at: str | None = None
    lever: str | None = None
    outcome: str | None = None
    why: str | None = None
    source: str | None = None
    yields: int | None = None
    origin: Origin | None = None

    @property
    def came(self) -> Origin:
        return self.origin or NO_ORIGIN


class Imported(_Read, frozen=True):
    """Any history record, for its id and the origin of one another writer made (recover.py)."""
    id: int = 0
    origin: Origin | None = None


class WriterNote(_Read, frozen=True):
    """An event, for the note of this store's writer (segments.WRITER_EVENT) recovery looks for."""
    type: str | None = None
    writer: str | None = None
    origin: Origin | None = None


class Pushed(_Read, frozen=True):
    n: int = 0
    commit: str | None = None
    ends: dict[str, Any] = {}
    through: list[int] = []
    """The store's seq each pushed segment reached, in order (conflicts.py finds the segment that carried a
    decision of this store's own by it)."""


class Last(_Read, frozen=True):
    at: str | None = None
    remote: str | None = None
    seq: int | None = None


class Applied(_Read, frozen=True):
    """What this store imported of one writer: its last segment, that segment's commit, and which local record each
    of its records became (idmap.py's ranges)."""
    n: int = 0
    commit: str | None = None
    ids: dict[str, list[list[int]]] = {}


class Kept(_Read, frozen=True):
    """The hot file's `sync` document: decoded once as a sync starts, replaced part by part as it goes, and kept by
    `doc` (what `status` reads of it too). The fields are in the order the document has always been written in;
    `journaled`, `remote` and `last` are written once a sync has set them (unset until then, and absent)."""
    writer: str = ""
    pushed: Pushed = msgspec.field(default_factory=Pushed)
    applied: dict[str, Applied] = {}
    journaled: bool | UnsetType = UNSET
    """This store's writer is in its journals (its `sync_writer` event), where a rebuild finds it."""
    remote: str | UnsetType = UNSET
    """The remote as the console's S finds it again: a remote's name, or a path or URL made absolute."""
    last: Last | UnsetType = UNSET
    """The last sync after which nothing of this store's waited."""


def kept(store, name: str) -> Kept | None:
    """The store's sync document, None for a store that never synced."""
    doc = store.kept(name)
    return msgspec.convert(doc, Kept) if doc else None


def doc(state: Kept) -> dict[str, Any]:
    """The sync document as it is kept: its keys in the order they were always written, the unset ones left out."""
    out: dict[str, Any] = msgspec.to_builtins(state)
    return out


def decided(record: Mapping[str, Any]) -> Decided:
    return msgspec.convert(record, Decided)


class Manifest(_Read, frozen=True):
    """A segment's manifest (segments.manifest writes it) as an import reads it, once segments.checked has checked
    it: whose, which of its writer's segments, what its writer had imported then."""
    writer: str
    n: int
    seen: dict[str, Any]  # as checked: an object; a count that is no int names no segment (importing.causal)


class Made(Manifest, frozen=True):
    """A manifest of this store's own writer, read back from its chain (sync.py's adoption of a killed push)."""
    count: int = 0
    ends: dict[str, Any] = {}
    through: int = 0
