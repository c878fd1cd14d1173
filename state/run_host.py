"""The sequencer's side of state/runs/host.py: a `RunHost` built on the Sequencer's parts, so runs/ is given what a
run needs (read the plan's state, record a run, hold a lever, end a run) and never the Sequencer itself.

This module sits beside actions and views, below the sequencer, which builds the host (`Sequencer.run_host`); what
it uses of the Sequencer is spelled out as `Sequencing` below, so the two stay apart in the import graph too.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from optseq.state.held import Held as Opened
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.plan.model import Lever, Plan
from optseq.state.record_types import Run, as_
from optseq.state.runs.host import Held, Record, Runner
from optseq.state.store.rows import Active
from optseq.state.store.store import Store
from optseq.state.views import ReadViews
from optseq.state.writes import Writer


class Acting(Protocol):
    """What the host uses of the Sequencer's actions (state/actions.py's Actions, a room beside this one)."""

    def decide_in_batch(self, lever_id: str, outcome: str, *, why: str, auto: bool, rule: str,
                        runs: Iterable[int] = (), stats: dict[str, Any] | None = None,
                        config: dict[str, Any] | None = None, why_said: dict[str, Any] | None = None,
                        source: str | None = None) -> dict[str, Any]: ...

    # the values of a criterion event, as a lever's command printed them (JSON): this method checks each
    def record_criterion_in_batch(self, lever_id: str, candidate: Any, criterion: Any, outcome: Any,
                                  evidence: Any = "") -> list[str]: ...

    def mark_stack_changes(self, run_id: int, fp: dict, testbed: dict | None = None) -> None: ...


class RunChecks(Protocol):
    """What the host uses of the Sequencer's checks before a run (state/lever_runs.py's LeverRuns, a room beside
    this one)."""

    @property
    def testbed(self) -> dict: ...

    @property
    def runner(self) -> Runner: ...

    def hold_lever(self, lever_id: str) -> Held: ...

    def check_runnable(self, lever_id: str) -> None: ...

    def check_watchable(self, lever_id: str) -> None: ...

    def watchable(self) -> list[str]: ...

    def pick(self, target: str, done: Collection[str] = ()) -> str | None: ...


class Sequencing(Protocol):
    """What the host uses of the Sequencer (state/sequencer.py): what the open holds, and the parts it composes."""

    @property
    def plan(self) -> Plan: ...

    @property
    def machine(self) -> PlanMachine: ...

    @property
    def store(self) -> Store: ...

    @property
    def readonly(self) -> bool: ...

    @property
    def held(self) -> Opened: ...

    @property
    def writer(self) -> Writer: ...

    @property
    def views(self) -> ReadViews: ...

    @property
    def actions(self) -> Acting: ...

    @property
    def lever_runs(self) -> RunChecks: ...


class SequencerHost:
    """runs/'s RunHost over a Sequencer: each read goes to the part that holds it now (a reload replaces the
    plan, a rolled-back transaction the machine), each write through the Sequencer's transaction."""

    def __init__(self, seq: Sequencing) -> None:
        self._seq = seq

    # -- what a run reads ----------------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self._seq.plan

    @property
    def machine(self) -> PlanMachine:
        return self._seq.machine

    def lever(self, lever_id: str) -> Lever:
        return self._seq.held.lever(lever_id)

    @property
    def testbed(self) -> dict:
        return self._seq.lever_runs.testbed

    @property
    def runner(self) -> Runner:
        return self._seq.lever_runs.runner

    @property
    def store_tag(self) -> str:
        from optseq.state.runners.interface import store_tag

        return store_tag(self._seq.store.path.parent)

    def record(self, run_id: int) -> Record:
        return self._seq.store.get("runs", run_id) or {}

    def run(self, run_id: int) -> Run:
        return as_(Run, self.record(run_id))

    def run_dir(self, run_id: int) -> Path:
        return self._seq.store.run_dir(run_id)

    def detached_runs(self) -> list[Active]:
        return self._seq.views.detached_runs()

    def check_writable(self, doing: str) -> None:
        from optseq.state.errors import InputError

        if self._seq.readonly:
            raise InputError(f"the store {self._seq.store.directory} is read-only here; {doing}")

    def check_runnable(self, lever_id: str) -> None:
        self._seq.lever_runs.check_runnable(lever_id)

    def check_watchable(self, lever_id: str) -> None:
        self._seq.lever_runs.check_watchable(lever_id)

    def watchable(self) -> list[str]:
        return self._seq.lever_runs.watchable()

    def pick(self, target: str, done: Collection[str] = ()) -> str | None:
        return self._seq.lever_runs.pick(target, done=done)

    # -- what a run does -----------------------------------------------------------------------------------------
    @property
    def lock(self) -> AbstractContextManager[Any]:
        return self._seq.held.lock

    def writing(self) -> AbstractContextManager[None]:
        return self._seq.writer.writing()

    def hold(self, lever_id: str) -> Held:
        return self._seq.lever_runs.hold_lever(lever_id)

    def append_run(self, fields: Record) -> Record:
        return self._seq.writer.append("runs", fields)

    def update(self, run_id: int, fields: Record) -> None:
        runs = self._seq.machine.runs
        if runs.is_compare(run_id):  # the compares the console lists, kept whole before the snapshot is
            self._seq.store.update("runs", run_id, fields)
            runs.compare({"id": run_id, **fields})
        else:
            self._seq.writer.update_run(run_id, fields)  # a screen's row beside its record

    def end_run(self, lever_id: str, status: str, verdict: str | None, record: Record) -> None:
        self._seq.writer.run_ended(lever_id, status, verdict, record)
        self._seq.writer.fire_points("runs", {"lever": lever_id, "status": status})

    def decide(self, lever_id: str, outcome: str, *, why: str, rule: str, runs: Sequence[int],
               stats: dict | None = None, config: dict | None = None, why_said: dict | None = None,
               source: str | None = None) -> None:
        self._seq.actions.decide_in_batch(lever_id, outcome, why=why, auto=True, rule=rule, runs=runs, stats=stats,
                                  config=config, why_said=why_said, source=source)

    def record_criterion(self, lever_id: str, event: Mapping[str, Any]) -> None:
        self._seq.actions.record_criterion_in_batch(lever_id, event.get("candidate"), event.get("criterion"),
                                            event.get("outcome"), event.get("evidence", ""))

    def mark_stack_changes(self, run_id: int, fingerprint: dict, testbed: dict | None) -> None:
        self._seq.actions.mark_stack_changes(run_id, fingerprint, testbed)
