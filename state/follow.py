"""The lever machine kept in step with the store: loaded from the store's snapshot and caught up with what was
committed after it (the whole history replayed only when there is no snapshot of this plan), then following what
other processes commit, line by line as it happened."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from optseq.state.held import Held
from optseq.state.lifecycle import snapshot
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.store.inflight import FINAL
from optseq.state.record_types import UNSET, Fact, Run, Typed, as_, decode, part

REPLAYED = ("facts", "criteria", "decisions", "runs", "events")
"""Tables whose records drive the machine, replayed together in `seq` order."""


class Follower:
    """Loads `held.machine` and keeps it caught up with the store's journals; writes nothing."""

    def __init__(self, held: Held, cannot_run: Callable[[str], str | None]):
        self.held = held
        self.cannot_run = cannot_run
        """Git's answer to why a ready lever cannot run (ReadViews.cannot_run), which the machine cannot ask."""
        self.synced: dict[str, int] = {}
        """The journals' ends the machine reflects."""
        self.replayed = False
        """Whether the last load replayed the whole history (the opener keeps a snapshot then)."""

    def load(self) -> PlanMachine:
        """The machine as the store stands now, put in `held.machine` and returned."""
        held = self.held
        saved = held.store.snapshot() or {}
        machine = snapshot.load(held.plan, saved.get("data"))
        if machine is None:
            self.synced, self.replayed = held.store.ends(), True
            machine = self.replay()
            held.machine = machine
        else:
            held.machine, self.synced = machine, dict(saved.get("ends") or {})
            self.catch_up()
        machine.cannot_run = self.cannot_run
        return machine

    def records(self) -> dict[str, list[dict[str, Any]]]:
        """Every stored record of the tables that drive the machine (reads the whole history)."""
        return {table: self.held.store.all(table) for table in REPLAYED}

    def replay(self) -> PlanMachine:
        """A machine built from the whole history, as a store without a snapshot gives it (`held` is left as is)."""
        machine = PlanMachine(self.held.plan)
        rows = [(r["seq"], table, r) for table, recs in self.records().items() for r in recs]
        for _, table, record in sorted(rows, key=lambda row: row[0]):
            self._replay(machine, table, record)
        return machine

    def _replay(self, machine: PlanMachine, table: str, record: dict[str, Any]) -> None:
        """One stored record onto the machine, decoded once here (state/record_types.py), where the plan knows
        what it names; one the current plan cannot replay is said and passed over, never losing the rest."""
        try:
            typed = decode(table, record)
        except msgspec.ValidationError as exc:  # a shape the store allows and no reader reads: passed over, said
            self.held.warnings.append(f"{table} record {record.get('id')} could not be replayed: {exc}")
            return
        if not self._known(table, typed):
            return
        try:
            machine.apply(table, record, typed)
        except Exception as exc:
            self.held.warnings.append(f"{table} record {typed.id} could not be replayed: {exc}")

    def _known(self, table: str, record: Typed) -> bool:
        plan, warnings = self.held.plan, self.held.warnings
        if isinstance(record, Fact):
            if not any(f.id == record.name for f in plan.facts):
                warnings.append(f"fact {record.name!r} is not in the plan; ignored")
                return False
            return True
        if record.lever is not None and not plan.has_lever(record.lever):
            warnings.append(f"{table} record {record.id} names lever {record.lever!r}, "
                            f"which the plan no longer has; kept in history, ignored")
            return False
        return True

    def catch_up(self) -> None:
        """Apply what was committed after the ends the machine reflects, line by line as it happened.

        Their derived events are already stored by whoever wrote them, so what this derives is dropped.
        """
        self.follow(self.held.store.since(self.synced))
        self.synced = self.held.store.ends()

    def follow(self, lines: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Another writer's lines (the store's journal lines: op, id, r, seq, at) applied to the machine."""
        machine = self.held.machine
        for table, line in lines:
            fields = line.get("r") or {}
            if line["op"] == "u":
                if table == "runs":
                    self._run_update(machine, {"id": line["id"], **fields})
                continue
            self._replay(machine, table, {"id": line["id"], **fields, "seq": line.get("seq"), "at": line.get("at")})

    @staticmethod
    def _run_update(machine: PlanMachine, fields: dict[str, Any]) -> None:
        """A run's update line (its id and the fields it set): a compare's or a screen's kept as it comes, and a
        run's end moving each lever it held, a screen's each by its own verdict."""
        update = as_(Run, fields)
        rid = update.id if update.id is not None else -1
        if machine.runs.is_compare(rid):
            machine.runs.compare(fields)
            return
        if machine.runs.is_screen(rid):
            machine.runs.screen(fields)  # its blocks and looks as they come
        if update.status not in FINAL or update.status is None:
            return
        verdicts, whys = part(update.screen or {}, "verdicts"), part(update.screen or {}, "whys")
        verdict = None if update.verdict is UNSET else update.verdict
        for lever in machine.runs.levers_of(rid):
            machine.run_ended(lever, update.status, verdicts.get(lever, verdict),
                              {**fields, "detail": whys.get(lever, update.detail)})

    def behind(self) -> bool:
        """Whether another process committed since the machine last caught up."""
        store = self.held.store
        # any read of the hot file (a status listing runs in flight) may have taken the new commit in
        # already: the journals' ends, not the file's signature, say whether the machine is behind
        return bool(store.refresh()) or store.ends() != self.synced

    def reload(self) -> bool:
        """Follow other processes: catch up with what they committed. True when something had changed."""
        with self.held.lock:
            if not self.behind():
                return False
            self.catch_up()
            self.held.forget_git()  # a run landed: ask git again
            return True
