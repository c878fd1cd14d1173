"""The one schema of every record the store gives out: the hot file's tables and each journal's lines, checked at
the boundary, as they are read, by msgspec (a record is converted against its type, which checks every field in
one pass of compiled code; the record itself is given out as it was stored). The checking is shape_check.py's.

A checksum says the bytes are the ones written; this says they are a record a reader can use. A hand edit, an
older or newer optseq or a bug can write JSON of the wrong shape with a right checksum, and a reader that trusted
it crashed in whichever module met the field first. Here a wrong shape is one `RecordShapeError` naming the file,
the record (table and id) and the field, and every command meets the same one.

How strict: a field a reader needs as a type (a list it iterates, an id it compares, a status or a lever state it
switches on) has that type, and a field no reader needs to be there may be missing, or null where readers take null
for missing. Keys this code does not know are allowed, everywhere: optseq has always grown its records by adding
fields without a schema version (a decision's `why_said`, an event's `said`, a snapshot lever's `watch`), every
reader takes a field it does not know for absent, and an older optseq must go on reading a newer one's store.
What a newer optseq may not do compatibly is change a known field's type: that is what `schema_version` is for.
The sequencer's snapshot is checked in the layout it says it has (`data.version`); a snapshot of another layout
is replayed over, never read, so it is not this code's to judge.
"""
# no `from __future__ import annotations`: msgspec takes the fields' types as objects, where it had to evaluate each
# string through typing at the first check of every process (the hot file's, at every open): 10M instructions of
# `optseq status`'s 373M
from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

from optseq.state.kinds import LeverState, RunStatus


SNAPSHOT_VERSION = 1
"""The snapshot layout checked here (lifecycle/snapshot.py VERSION; a test holds them equal)."""


class _Shape(Struct, forbid_unknown_fields=False):
    """Unknown keys allowed (see the module docstring)."""


Said = dict[str, Any]


# ---- history records: the fields of a journal line (`r`), the hot file's copies of them ----------------------

class Stats(_Shape):
    metric: str | None | UnsetType = UNSET
    n: int | None | UnsetType = UNSET
    estimate: float | None | UnsetType = UNSET
    ci_low: float | None | UnsetType = UNSET
    ci_high: float | None | UnsetType = UNSET
    p_value: float | None | UnsetType = UNSET
    higher_is_better: bool | UnsetType = UNSET
    ratios: list[float] | UnsetType = UNSET
    units: list[float] | UnsetType = UNSET
    unit: str | None | UnsetType = UNSET
    launches: int | None | UnsetType = UNSET  # what record_types.Stats types, for the run's readers
    replicate: str | None | UnsetType = UNSET
    noise: str | None | UnsetType = UNSET
    bench_size: str | None | UnsetType = UNSET
    order: str | None | UnsetType = UNSET
    stalls: str | None | UnsetType = UNSET
    baseline: dict[str, Any] | None | UnsetType = UNSET
    candidate: dict[str, Any] | None | UnsetType = UNSET


class Verdict(_Shape):
    outcome: str | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    said: Said | None | UnsetType = UNSET


class Summary(_Shape):
    stats: Stats | None | UnsetType = UNSET
    verdict: Verdict | str | None | UnsetType = UNSET  # readers take a verdict that is no object as none
    chosen: str | None | UnsetType = UNSET
    best_of: dict[str, Any] | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET  # what record_types.Summary types, for the run's readers
    error: str | None | UnsetType = UNSET
    noise: str | None | UnsetType = UNSET
    bench_size: str | None | UnsetType = UNSET
    arms: dict[str, Any] | None | UnsetType = UNSET


class Testbed(_Shape):
    """A run's testbed: the views read its name; a sync (issue 39) will key runs by it."""
    name: str
    id: str | UnsetType = UNSET
    parts: dict[str, str] | UnsetType = UNSET
    fallback: str | UnsetType = UNSET  # a cluster's run whose node said nothing: the launcher's, said so


class RunFields(_Shape):
    lever: str | None | UnsetType = UNSET
    kind: str | UnsetType = UNSET
    status: RunStatus | UnsetType = UNSET
    verdict: str | None | UnsetType = UNSET
    argv: list[str] | UnsetType = UNSET
    pid: int | None | UnsetType = UNSET
    pgid: int | None | UnsetType = UNSET
    child_pid: int | None | UnsetType = UNSET
    submission_id: str | None | UnsetType = UNSET
    ray_address: str | None | UnsetType = UNSET
    started: str | None | UnsetType = UNSET
    ended: str | None | UnsetType = UNSET
    elapsed_s: float | None | UnsetType = UNSET
    exit_code: int | None | UnsetType = UNSET
    detail: str | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    note: str | None | UnsetType = UNSET
    passes: int | UnsetType = UNSET
    n_samples: int | None | UnsetType = UNSET
    samples_file: str | None | UnsetType = UNSET
    log: str | None | UnsetType = UNSET
    warnings: list[Any] | None | UnsetType = UNSET
    infra: dict[str, Any] | None | UnsetType = UNSET
    env: dict[str, Any] | None | UnsetType = UNSET
    fingerprint: dict[str, Any] | None | UnsetType = UNSET
    summary: Summary | str | None | UnsetType = UNSET  # readers take a summary that is no object as empty
    testbed: Testbed | UnsetType = UNSET  # the machine it ran on (state/runs/testbed.py); none before testbeds were
    screen: dict[str, Any] | None | UnsetType = UNSET  # a screen's design, seed, blocks and looks (kind "screen")
    confirm: dict[str, Any] | None | UnsetType = UNSET  # a screen's paired confirmation of a combination
    compare: dict[str, Any] | None | UnsetType = UNSET  # what record_types.Run types, for the run's readers
    code: dict[str, Any] | None | UnsetType = UNSET
    log_tail: list[Any] | None | UnsetType = UNSET
    notes: list[Any] | None | UnsetType = UNSET


class DecisionFields(_Shape):
    lever: str | UnsetType = UNSET
    outcome: str | UnsetType = UNSET
    auto: bool | UnsetType = UNSET
    rule: str | None | UnsetType = UNSET
    why: str | None | UnsetType = UNSET
    runs: list[int] | None | UnsetType = UNSET
    stats: Stats | None | UnsetType = UNSET
    config: dict[str, Any] | None | UnsetType = UNSET
    supersedes: int | None | UnsetType = UNSET
    source: str | None | UnsetType = UNSET
    why_said: Said | None | UnsetType = UNSET


class CriterionFields(_Shape):
    lever: str | UnsetType = UNSET
    candidate: str | UnsetType = UNSET
    criterion: str | UnsetType = UNSET
    outcome: Literal["pass", "fail"] | UnsetType = UNSET
    evidence: str | None | UnsetType = UNSET


class FactFields(_Shape):
    name: str | UnsetType = UNSET
    value: bool | UnsetType = UNSET


class EventFields(_Shape):
    type: str | UnsetType = UNSET
    lever: str | None | UnsetType = UNSET
    point: str | None | UnsetType = UNSET
    reopens: list[str] | None | UnsetType = UNSET
    text: str | None | UnsetType = UNSET
    path: str | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    said: Said | None | UnsetType = UNSET
    derived: bool | None | UnsetType = UNSET
    decision: int | None | UnsetType = UNSET
    run: int | None | UnsetType = UNSET
    since: str | None | UnsetType = UNSET
    commit: str | None | UnsetType = UNSET
    base: str | None | UnsetType = UNSET


FIELDS: dict[str, type[_Shape]] = {"runs": RunFields, "decisions": DecisionFields, "criteria": CriterionFields,
                                   "facts": FactFields, "events": EventFields}
"""Each history table's record fields, every one optional: an update line sets some of them."""
REQUIRED: dict[str, tuple[str, ...]] = {"runs": ("status",), "decisions": ("lever", "outcome"),
                                        "criteria": ("lever", "candidate", "criterion", "outcome"),
                                        "facts": ("name", "value"), "events": ("type",)}
"""What a whole record (an insert, a replace, a kept copy) must have: what the lever machine reads unguarded."""


class Line(_Shape):
    """A journal line (journal.py), its fields `r` checked by table."""
    op: Literal["i", "u", "r"]
    id: int
    r: dict[str, Any] | UnsetType = UNSET
    seq: int | None | UnsetType = UNSET
    at: str | None | UnsetType = UNSET
    pl: int | UnsetType = UNSET


class Stored(_Shape):
    """What the store adds to a whole record (a kept copy, a version-1 row)."""
    seq: int
    at: str | None | UnsetType = UNSET
    id: int | UnsetType = UNSET


# ---- the hot file -------------------------------------------------------------------------------------------

class LeverRow(_Shape):
    lever: str
    state: LeverState
    outcome: str | None | UnsetType = UNSET
    stale: bool | UnsetType = UNSET
    why_blocked: list[str] | UnsetType = UNSET
    seq: int | UnsetType = UNSET
    at: str | UnsetType = UNSET


class ActiveRow(_Shape):
    run: int
    lever: str | None | UnsetType = UNSET
    pid: int | None | UnsetType = UNSET
    pgid: int | None | UnsetType = UNSET
    submission_id: str | None | UnsetType = UNSET
    detached: bool | UnsetType = UNSET
    from_journal: bool | UnsetType = UNSET
    elsewhere: str | UnsetType = UNSET


class Group(_Shape):
    n: int
    last: list[dict[str, Any]]


class RecentRow(_Shape):
    table: Literal["decisions", "events", "criteria", "facts"]
    keys: dict[str, Group]


class KeptRun(RunFields):
    """A run as the snapshot's run index keeps it (lifecycle/run_index.py KEPT)."""
    id: int | UnsetType = UNSET
    seq: int | None | UnsetType = UNSET
    at: str | None | UnsetType = UNSET


class KeptDecision(DecisionFields):
    """A decision as a snapshot lever keeps it (its standing one)."""
    id: int | None | UnsetType = UNSET
    seq: int | None | UnsetType = UNSET
    at: str | None | UnsetType = UNSET


class Cleared(_Shape):
    outcome: str | None  # the export says "<why>; was <outcome>" of it
    why: str | None
    decision: KeptDecision | None | UnsetType = UNSET
    run: int | None | UnsetType = UNSET


class Stack(_Shape):
    infra: dict[str, Any] | None | UnsetType = UNSET
    fingerprint: dict[str, Any] | None | UnsetType = UNSET
    started: str | None | UnsetType = UNSET
    testbed: Testbed | UnsetType = UNSET


class RunIndexData(_Shape):
    running: dict[str, int] | UnsetType = UNSET
    last: dict[str, KeptRun] | UnsetType = UNSET
    last_stats: dict[str, KeptRun] | UnsetType = UNSET
    recent: dict[str, list[KeptRun]] | UnsetType = UNSET
    stacks: dict[str, Stack] | UnsetType = UNSET
    latest_code: dict[str, str] | str | None | UnsetType = UNSET
    compares: list[KeptRun] | UnsetType = UNSET
    screens: list[KeptRun] | UnsetType = UNSET
    testbeds: dict[str, str] | UnsetType = UNSET


class Unavailable(_Shape):
    """A lever whose last run was `unavailable` (lifecycle/moves.py): `status` and the export print its reason and
    run, `next` compares its device."""
    reason: str | None
    run: int | None
    device: str | None | UnsetType = UNSET


class LeverSnapshot(_Shape):
    state: LeverState
    plan_doc: str | None | UnsetType = UNSET
    outcome: str | None | UnsetType = UNSET
    decision_seq: int | None | UnsetType = UNSET
    decision: KeptDecision | None | UnsetType = UNSET
    stale_reason: str | None | UnsetType = UNSET
    stale_said: Said | None | UnsetType = UNSET
    closed_by: str | None | UnsetType = UNSET
    closed_said: Said | None | UnsetType = UNSET
    closed_by_lever: str | None | UnsetType = UNSET
    origin: str | None | UnsetType = UNSET
    cleared: Cleared | None | UnsetType = UNSET
    last_run: KeptRun | None | UnsetType = UNSET
    unavailable: Unavailable | None | UnsetType = UNSET
    landed: dict[str, Any] | None | UnsetType = UNSET
    watch: dict[str, Any] | None | UnsetType = UNSET
    results: list[tuple[str, str, Literal["pass", "fail"], str | None]] | UnsetType = UNSET


class SnapshotData(_Shape):
    version: int
    plan: str | UnsetType = UNSET
    facts: dict[str, bool] | UnsetType = UNSET
    last_device: str | None | UnsetType = UNSET
    fired: dict[str, str | None] | UnsetType = UNSET
    runs: RunIndexData | UnsetType = UNSET
    levers: dict[str, LeverSnapshot] | UnsetType = UNSET


class SnapshotRow(_Shape):
    ends: dict[str, int]
    seq: int
    data: Any = None


class Meta(_Shape):
    """What the hand checks of schema.py and integrity.meta_problem leave: the levers' chains, the times."""
    heads: dict[str, dict[str, int]] | UnsetType = UNSET
    last_at: str | None | UnsetType = UNSET
    rebuilt_at: str | None | UnsetType = UNSET
    inflight_checked: str | None | UnsetType = UNSET


HOT: dict[str, type[_Shape]] = {"meta": Meta, "levers": LeverRow, "active": ActiveRow, "recent": RecentRow,
                                "snapshot": SnapshotRow}
"""The hot file's tables (layout.py) and their rows' shapes; a table not named here is no reader's."""
