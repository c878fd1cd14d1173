"""Runs in flight: kept in the hot state, interrupted when their process died, detached when a cluster runs them.

A run is in flight from its first record until a status in kinds.ENDED. Its row in the hot file's `active`
table (run id, lever, pid, pgid, a cluster's submission id) is all that recovery reads, so opening a
store never reads the runs journal to find the runs a dead optseq left behind, with one exception: a hot
file rebuilt from the journals (`rebuilt_at` in its meta), by this optseq or an older one whose rebuild
may have been killed before it wrote every row, is checked against the runs journal once, by the first
writer that opens it (`inflight_checked`). A row found there names a pid from history, which may be
another process's by now: such a run is held only while its lever's lock is (the kernel drops a flock
when its holder dies, however it dies).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tinydb import Query
from tinydb.table import Table

from optseq.state.kinds import ENDED
from optseq.state.store.hot import Hot
from optseq.state.store.layout import ACTIVE, META, META_ID, RUNS_DIR
from optseq.state.store.locks import LeverLock, pid_alive
from optseq.state.store.records import utc_now
from optseq.state.store.rows import Active, Recovered, active, meta

FINAL = ENDED
"""Run statuses that end a run (kinds.ENDED): such a run is no longer in flight. The name the sequencer and the
store's doctor, schema and settled import."""
FROM_JOURNAL = "from_journal"
"""An `active` row read from the runs journal (a rebuild's, or the check after one), not written by its run."""
ELSEWHERE = "elsewhere"
"""An `active` row's writer, for a run another writer's sync brought (state/sync/): in flight on that machine, which
ends it; recovery here never does."""
CHECKED = "inflight_checked"
"""The meta key saying which rebuild (its `rebuilt_at`) the runs in flight were checked against the journal for."""


def in_flight_row(run_id: int, record: Mapping[str, Any]) -> dict[str, Any]:
    """A run's `active` row as its record says it: what recovery needs to find its process or its job again."""
    origin = record.get("origin")
    if isinstance(origin, dict) and origin.get("writer"):  # another writer's run (optseq sync): not this machine's
        return {"run": run_id, "lever": record.get("lever"), ELSEWHERE: str(origin["writer"])}
    return {"run": run_id, "lever": record.get("lever"),
            **{k: record[k] for k in ("pid", "pgid", "submission_id") if k in record}}


class Batches(Protocol):
    """Where a recovery's writes go: the store's Transaction (transaction.py, which imports schema.py, which imports
    this module's FINAL)."""

    def batch(self) -> AbstractContextManager[None]: ...


class Updates(Protocol):
    """What ends a run: the store's Writer (writing.py, which imports this module's `track`)."""

    def update(self, table: str, doc_id: int, fields: Mapping[str, Any]) -> dict[str, Any]: ...


class RunsInFlight:
    """The store's runs in flight, over the one open store's `Hot` state: read from its `active` table, ended
    through `writer` in a batch of `tx`."""

    def __init__(self, hot: Hot, tx: Batches, writer: Updates) -> None:
        self.hot, self.tx, self.writer = hot, tx, writer

    def rows(self) -> list[Active]:
        """Runs in flight, as their rows say them."""
        with self.hot.mutex:
            return [active(d) for d in self.hot.db.table(ACTIVE).all()]

    def active_runs(self) -> list[Active]:
        """Runs in flight, as their rows say them (the sequencer's and the console's readers')."""
        return self.rows()

    def recover_interrupted(self, is_alive: Callable[[Any], bool] = pid_alive) -> list[Recovered]:
        """Runs in flight whose process is gone: "interrupted" when they ran here (returned with their pgid),
        "detached" when they run on a cluster under a submission id (they go on there, and stay `running`
        until a later optseq re-attaches to them). A run of no lever (a compare) is never re-attached, since
        `--run LEVER` is what re-attaches: it is "interrupted" wherever it ran (returned with its submission id,
        whose job the caller may stop)."""
        with self.hot.mutex:
            self.hot.check_writable("runs")
            ended = utc_now()
            with self.tx.batch():
                self._check_rebuilt()
                # under the lock now; a lever-less run an older optseq left detached ends here too
                gone = [a for a in self.rows() if self.orphaned(a, is_alive) or (a.detached and not a.lever)]
                return [self._recovered(a, ended, is_alive) for a in gone]

    def _recovered(self, a: Active, ended: str, is_alive: Callable[[Any], bool]) -> Recovered:
        """One run found in flight with its process gone, ended or detached as recover_interrupted says."""
        if a.submission_id and not a.lever:
            note = (f"optseq (pid {a.pid}) stopped while this run's job {a.submission_id} ran "
                    "on the cluster; a run of no lever (a compare) cannot be re-attached, so it ends "
                    "here, and its job may still be running there")
            self.writer.update("runs", a.run, {"status": "interrupted", "ended": ended, "note": note})
            return _found(a, "interrupted", a.submission_id)
        if a.submission_id:
            note = (f"optseq (pid {a.pid}) stopped while this run's job "
                    f"{a.submission_id} ran on the cluster; the next optseq --run re-attaches to it")
            self.writer.update("runs", a.run, {"note": note})
            self.hot.db.table(ACTIVE).update({"detached": True}, Query().run == a.run)
            return _found(a, "detached", a.submission_id)
        note = (f"optseq stopped while this run was running; its process (pid {a.pid}) is gone"
                if not is_alive(a.pid) else
                f"optseq stopped while this run was running; no process holds its lever (pid "
                f"{a.pid}, read back from the runs journal, is another process's now)")
        self.writer.update("runs", a.run, {"status": "interrupted", "ended": ended, "note": note})
        return _found(a, "interrupted")

    def needs_recovery(self) -> bool:
        """Whether an open must look for runs left behind: a row whose process is gone, or a rebuilt hot file whose
        runs in flight were not checked against the journal yet."""
        with self.hot.mutex:
            return self._unchecked_rebuild() is not None or any(self.orphaned(a, pid_alive) for a in self.rows())

    def orphaned(self, row: Active, is_alive: Callable[[Any], bool] = pid_alive) -> bool:
        """A run in flight whose process is gone, and that nobody has recovered yet; one read from the journal is
        held only while its lever's lock is (its pid is history's, and may be another process's now)."""
        if orphaned(row, is_alive):
            return True
        if row.from_journal and not row.detached and not row.elsewhere and row.lever:
            return not LeverLock(self.hot.directory / RUNS_DIR, row.lever).held_by_other()
        return False

    def detached_runs(self) -> list[Active]:
        """Runs going on on a cluster that no optseq follows now (a lever and a submission id each)."""
        return [a for a in self.rows() if a.detached]

    def _unchecked_rebuild(self) -> str | None:
        doc = self.hot.db.table(META).get(doc_id=META_ID)
        found = meta(doc) if isinstance(doc, Mapping) else None
        return found.rebuilt_at if found is not None and found.rebuilt_at \
            and found.inflight_checked != found.rebuilt_at else None

    def _check_rebuilt(self) -> None:
        """A rebuilt hot file's runs in flight, checked against the runs journal once (inside the open batch): a run
        the journal has in flight and the file has no row for (an older rebuild killed halfway) gets one, for the
        recovery that follows."""
        rebuilt = self._unchecked_rebuild()
        if rebuilt is None:
            return
        rows = {a.run for a in self.rows()}
        active_ = self.hot.db.table(ACTIVE)
        # every row there came from the journal too (no run starts before its writer's open has checked): an older
        # rebuild's rows say so now, for their pids are history's as well
        active_.update({FROM_JOURNAL: True})
        for run_id, record in sorted(self.hot.records("runs").items()):
            status = record.get("status")  # a history record, not a row: one field of it, not the whole decoded
            if status and status not in ENDED and run_id not in rows:
                active_.insert({**in_flight_row(run_id, record), FROM_JOURNAL: True})
        self.hot.db.table(META).update({CHECKED: rebuilt}, doc_ids=[META_ID])


def _found(a: Active, status: str, submission_id: str | None = None) -> Recovered:
    return Recovered(id=a.run, status=status, lever=a.lever, pid=a.pid, pgid=a.pgid, submission_id=submission_id)


def track(active: Table, doc_id: int, fields: Mapping[str, Any], new: bool = False,
          elsewhere: str | None = None) -> None:
    """A run's `active` row kept as its record is written (`active` is the hot file's table), so recovery never
    reads the runs journal."""
    q = Query().run == doc_id
    status = fields.get("status")
    if status in ENDED:
        active.remove(q)
    elif new and status and elsewhere:  # another writer's run: its pid is another machine's
        active.insert({"run": doc_id, "lever": fields.get("lever"), ELSEWHERE: elsewhere})
    elif new and status:
        active.insert({"run": doc_id, "lever": fields.get("lever"),
                       **{k: fields[k] for k in ("pid", "pgid") if k in fields}})
    elif not new and any(k in fields for k in ("pid", "pgid", "submission_id")):
        changes = {k: fields[k] for k in ("pid", "pgid", "submission_id") if k in fields}
        if "pid" in fields:  # a process follows it again
            changes["detached"] = False
        active.update(changes, q)


def orphaned(row: Active, is_alive: Callable[[Any], bool]) -> bool:
    """A run in flight whose process is gone, and that nobody has recovered yet."""
    return not row.detached and not row.elsewhere and not is_alive(row.pid)
