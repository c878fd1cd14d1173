"""What status, the console and the export need of the runs, kept as the runs happen instead of read from them all.

Per lever: the run in flight, the latest finished run and the latest one with paired statistics. Per
evidence run of a standing decision: the stack it was measured on and its fingerprint (staleness needs
both). And the newest workload code hash. It lives in the lever machine's snapshot, so its size follows
the plan, not the history: runs nobody's decision cites are dropped from it.
"""

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from optseq.state.kinds import IN_FLIGHT, RunStatus
from optseq.state.lifecycle.history_points import measured_at
from optseq.state.record_types import Run, as_, part
from optseq.state.screen_record import ScreenRun, screen_run

KEPT = ("id", "lever", "status", "verdict", "seq", "at", "started", "ended", "elapsed_s", "detail", "reason",
        "summary", "passes", "n_samples", "infra", "testbed", "origin")
"""The fields of a finished run that the views read (`origin`: the writer and id of a run merged by optseq sync,
which the console's detail and Run tab name); logs, warnings and env stay in the journal. Beside them,
`on`: the run's commit and device (history_points.measured_at), absent from runs kept before it was; and
`left_running`: how many processes its launches left that optseq stopped, where any (the record names them)."""


RECENT = 30
"""Finished runs kept per lever for the console's detail and history plot; `optseq runs` has them all."""


class Stack(msgspec.Struct, forbid_unknown_fields=False):
    """What an evidence run (or one in flight) was measured on, kept while a decision cites it: its infra (the
    stack) and fingerprint, and what its final record does not repeat (its testbed, start, a merged run's origin).
    The snapshot keeps it in this layout; a part never set is left out of it, as the dict it was left it out."""
    infra: dict[str, Any] | None = None
    fingerprint: dict[str, Any] | None = None
    testbed: dict[str, Any] | None | UnsetType = UNSET
    started: str | UnsetType = UNSET
    origin: dict[str, Any] | UnsetType = UNSET


class KeptRun(Run, frozen=True):
    """A finished run as the index keeps it: a Run (record_types) of the KEPT fields, those it does not keep None,
    with `on` (its commit and device) and `left_running` (what its launches left, which optseq stopped) beside them.
    `stored` is the same copy as the store's dict, key for key in the order it was kept: what passes a run on whole
    (the snapshot, status --json's figures, the export's charts, a free-form part no Struct types) takes that, so
    their bytes are the ones the dict-keeping index gave."""
    on: dict[str, Any] | None = None
    left_running: int | None = None
    stored: dict[str, Any] = {}

    @property
    def stored_stats(self) -> dict[str, Any]:
        """Its statistics as stored, every key (status --json hands them out whole); empty where it has none."""
        return part(part(self.stored, "summary"), "stats")

    @property
    def split(self) -> dict[str, Any]:
        """Its summary's `split` (where the time went: run_record.py), a free-form part; empty where none."""
        return part(part(self.stored, "summary"), "split")


def kept_run(stored: dict[str, Any]) -> KeptRun:
    """A kept copy (a snapshot's) as its type, decoded once as a Run (the store checked its fields as it read the
    run), with what the index added beside them. Not converted to a KeptRun by msgspec: that would build a second
    type of every Run field on status' path, for the same decode."""
    run = msgspec.convert(stored, Run)  # `on` and `left_running` the index wrote: a dict and a count, or none
    return KeptRun(**msgspec.structs.asdict(run), on=stored.get("on"), left_running=stored.get("left_running"),
                   stored=stored)


class KeptCompare(msgspec.Struct, frozen=True):
    """A compare as the index keeps it: its record typed (`run`, record_types.Run) and as stored (`stored`: the
    record's KEPT fields, `compare` and `code`, merged over its updates in the order they came)."""
    run: Run
    stored: dict[str, Any]

    @property
    def id(self) -> int | None:
        return self.run.id


class KeptScreen(msgspec.Struct, frozen=True):
    """A screen as the index keeps it: its record typed (`run`, screen_record.ScreenRun: the part the views read)
    and as stored (`stored`: the record's KEPT fields, `kind`, `screen` and `samples_file`, merged over its updates)."""
    run: ScreenRun
    stored: dict[str, Any]

    @property
    def id(self) -> int | None:
        return self.run.id


class RunIndex:
    def __init__(self) -> None:
        self.running: dict[str, int] = {}
        """lever -> id of its run in flight."""
        self.last: dict[str, KeptRun] = {}
        """lever -> its latest finished run (the KEPT fields)."""
        self.last_stats: dict[str, KeptRun] = {}
        """lever -> its latest run whose summary has paired statistics."""
        self.recent: dict[str, list[KeptRun]] = {}
        """lever -> its newest finished runs (the KEPT fields), oldest first, at most RECENT."""
        self.stacks: dict[int, Stack] = {}
        """run id -> what an evidence run was measured on."""
        self.compares: list[KeptCompare] = []
        """The newest compares (`optseq compare`: runs of no lever), in flight or finished, oldest first, at most
        RECENT: what the console lists."""
        self.screens: list[KeptScreen] = []
        """The newest screens (`optseq --run screen`: runs of no lever over several levers), in flight or finished,
        oldest first, at most RECENT: the levers' measured interactions are derived from them (state/screen_views.py)."""
        self.testbeds: dict[str, str] = {}
        """testbed name -> its fingerprint id, for every testbed a finished run was measured on: the views name a
        number's testbed once more than one appears."""
        self.latest_code: dict[str, str] = {}
        """workload -> its newest code hash: each command-pair benchmark is its own workload, the built-in
        benches one (`default`), so a change to one team script never flags the others' numbers."""

    def started(self, record: dict[str, Any], run: Run | None = None) -> None:
        """A run started (or replayed): `record` the store's, `run` its type where the caller decoded it."""
        run = as_(Run, record if run is None else run)
        rid, lever = run.id, run.lever
        if rid is None or lever is None:
            return
        # the final record repeats neither its start nor its origin: run hours (optseq whatif) need both ends, the
        # views a merged run's writer
        self.stacks[rid] = Stack(infra=run.infra or {}, fingerprint=run.fingerprint or {},
                                 testbed=UNSET if run.testbed is None else run.testbed,
                                 started=run.started or UNSET, origin=run.origin or UNSET)
        if run.status in IN_FLIGHT:
            self.running[lever] = rid

    def ended(self, record: dict[str, Any], decides: bool = True, run: Run | None = None) -> None:
        """`record`, the store's, is kept whole (its KEPT fields) for the views; the rest is read from `run`, its
        type where the caller decoded it. `decides`: False for a run on another testbed than the plan's deciding
        one: kept for the views, its code hash moves no lever's warning."""
        run = as_(Run, record if run is None else run)
        rid, lever = run.id, run.lever
        if rid is None or lever is None:
            return
        self.seen(run)
        if self.running.get(lever) == rid:
            del self.running[lever]
        stored = {k: record[k] for k in KEPT if k in record}
        on = measured_at(record) or None
        if on:  # the commit and device beside each point of the plot and the export's change lines
            stored["on"] = on
        left_running = len(run.leftovers) if run.leftovers else None
        if left_running:
            stored["left_running"] = left_running  # status says it; the record names each
        started, origin = run.started, run.origin
        stack = self.stacks.get(rid)
        if stack is not None:
            if "started" not in stored and stack.started:
                stored["started"] = started = stack.started
            if "origin" not in stored and stack.origin:
                stored["origin"] = origin = stack.origin
        if stack is not None or run.infra is not None:
            entry = self.stacks.setdefault(rid, Stack(infra=run.infra or {}, fingerprint={}))
            entry.fingerprint = run.fingerprint or entry.fingerprint or {}
            if run.testbed is not None:
                entry.testbed = run.testbed
        # typed from the run the caller decoded (and the start the stack kept): no second decode. `stored`, built
        # key for key as the dict-keeping index built it, is what the snapshot writes
        kept = KeptRun(id=rid, lever=lever, status=run.status, verdict=run.verdict, seq=run.seq, at=run.at,
                       started=started, ended=run.ended, elapsed_s=run.elapsed_s, detail=run.detail,
                       reason=run.reason, summary=run.summary, passes=run.passes, n_samples=run.n_samples,
                       infra=run.infra, testbed=run.testbed, origin=origin, on=on, left_running=left_running,
                       stored=stored)
        # run ids grow with time: a record replayed late never displaces a newer run
        if _id(self.last.get(lever)) <= rid:
            self.last[lever] = kept
        recent = [r for r in self.recent.get(lever, []) if r.id != rid] + [kept]
        self.recent[lever] = sorted(recent, key=lambda r: r.id or 0)[-RECENT:]
        if run.figures.stats is not None and _id(self.last_stats.get(lever)) <= rid:
            self.last_stats[lever] = kept
        fingerprint = run.fingerprint or {}
        if fingerprint.get("code_hash") and decides:
            self.latest_code[workload(fingerprint)] = fingerprint["code_hash"]

    def seen(self, run: Run) -> None:
        testbed = run.testbed or {}
        if isinstance(testbed.get("name"), str):
            self.testbeds[testbed["name"]] = str(testbed.get("id") or testbed["name"])

    def testbed(self, run_id: int | None) -> dict[str, Any] | None:
        """The testbed an evidence run (or one in flight) was measured on; None where unknown."""
        stack = self.stacks.get(run_id) if run_id is not None else None
        return stack.testbed or None if stack is not None else None

    def compare(self, record: dict[str, Any]) -> None:
        """A compare started or ended (its record, or the fields of its final update with its id)."""
        rid = record.get("id")
        if not isinstance(rid, int):
            return
        old = next((c.stored for c in self.compares if c.id == rid), {})
        stored = {**old, **{k: record[k] for k in (*KEPT, "compare", "code") if k in record}}
        kept = KeptCompare(run=as_(Run, stored), stored=stored)  # decoded once, here, as it is kept
        self.seen(kept.run)
        self.compares = sorted([c for c in self.compares if c.id != rid] + [kept], key=lambda c: c.id or 0)[-RECENT:]

    def screen(self, record: dict[str, Any]) -> None:
        """A screen started or ended (its record, or the fields of an update with its id)."""
        rid = record.get("id")
        if not isinstance(rid, int):
            return
        self.seen(as_(Run, record))
        old = next((c.stored for c in self.screens if c.id == rid), {})
        stored = {**old, **{k: record[k] for k in (*KEPT, "kind", "screen", "samples_file") if k in record}}
        kept = KeptScreen(run=screen_run(stored), stored=stored)  # decoded once, here: each view reads its type
        self.screens = sorted([c for c in self.screens if c.id != rid] + [kept], key=lambda c: c.id or 0)[-RECENT:]

    def screen_runs(self) -> list[ScreenRun]:
        """The kept screens as their type (decoded as they were kept), oldest first."""
        return [c.run for c in self.screens]

    def is_screen(self, run_id: int | None) -> bool:
        return run_id is not None and any(c.id == run_id for c in self.screens)

    def is_compare(self, run_id: int) -> bool:
        return any(c.id == run_id for c in self.compares)

    def run_of(self, lever: str) -> int | None:
        return self.running.get(lever)

    def lever_of(self, run_id: int) -> str | None:
        """The lever of a run in flight."""
        return next((lever for lever, rid in self.running.items() if rid == run_id), None)

    def levers_of(self, run_id: int) -> list[str]:
        """Every lever a run in flight holds: one for a lever's run, each of a screen's."""
        return [lever for lever, rid in self.running.items() if rid == run_id]

    def infra(self, run_id: int) -> dict[str, Any] | None:
        entry = self.stacks.get(run_id)
        return None if entry is None else entry.infra

    def fingerprint(self, run_id: int | None) -> dict[str, Any]:
        entry = self.stacks.get(run_id) if run_id is not None else None
        return (entry.fingerprint if entry is not None else None) or {}

    def latest(self, lever: str) -> KeptRun | None:
        """The latest run of a lever: the one in flight (id and status only), else the latest finished."""
        rid = self.running.get(lever)
        if rid is not None:
            return KeptRun(id=rid, lever=lever, status=RunStatus.RUNNING,
                           stored={"id": rid, "lever": lever, "status": "running"})
        return self.last.get(lever)

    def prune(self, cited: set[int]) -> None:
        """Forget the stacks of runs no standing decision cites and that are not in flight."""
        keep = cited | set(self.running.values())
        self.stacks = {rid: entry for rid, entry in self.stacks.items() if rid in keep}

    def to_dict(self) -> dict[str, Any]:
        return {"running": self.running, "last": {k: r.stored for k, r in self.last.items()},
                "last_stats": {k: r.stored for k, r in self.last_stats.items()},
                "recent": {k: [r.stored for r in runs] for k, runs in self.recent.items()},
                "stacks": {str(k): msgspec.to_builtins(v) for k, v in self.stacks.items()},
                "latest_code": self.latest_code,
                "compares": [c.stored for c in self.compares], "screens": [c.stored for c in self.screens],
                "testbeds": self.testbeds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunIndex":
        saved = msgspec.convert(data, _Saved, strict=False)  # one decode; the stacks' ids are JSON's strings
        index = cls()
        index.running, index.stacks, index.testbeds = saved.running, saved.stacks, saved.testbeds
        # a run kept in several places (its lever's last, its last with statistics, its recent) decoded once
        decoded: dict[tuple[str, int | None], KeptRun] = {}

        def typed(lever: str, stored: dict[str, Any]) -> KeptRun:
            key = (lever, stored.get("id"))
            found = decoded.get(key)
            if found is None or found.stored != stored:
                found = decoded[key] = kept_run(stored)
            return found

        index.recent = {lever: [typed(lever, r) for r in runs] for lever, runs in saved.recent.items()}
        index.last = {lever: typed(lever, r) for lever, r in saved.last.items()}
        index.last_stats = {lever: typed(lever, r) for lever, r in saved.last_stats.items()}
        index.compares = [KeptCompare(run=as_(Run, c), stored=c) for c in saved.compares]
        index.screens = [KeptScreen(run=screen_run(c), stored=c) for c in saved.screens]
        latest = saved.latest_code
        # snapshots before workloads were told apart held one hash, the built-in benches'
        index.latest_code = {"default": latest} if isinstance(latest, str) else dict(latest or {})
        return index


class _Saved(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A run index as to_dict writes it (the kept runs as the store's dicts, each typed by from_dict)."""
    running: dict[str, int] = {}
    last: dict[str, dict[str, Any]] = {}
    last_stats: dict[str, dict[str, Any]] = {}
    recent: dict[str, list[dict[str, Any]]] = {}
    stacks: dict[int, Stack] = {}
    latest_code: dict[str, str] | str | None = None
    compares: list[dict[str, Any]] = []
    screens: list[dict[str, Any]] = []
    testbeds: dict[str, str] = {}


def _id(kept: KeptRun | None) -> int:
    return (kept.id or 0) if kept is not None else 0


def workload(fingerprint: dict[str, Any]) -> str:
    return fingerprint.get("workload") or "default"
