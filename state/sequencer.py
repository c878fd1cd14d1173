"""The one API the CLI and the console call: plan + store + machine kept in step, its parts composed.

Each responsibility is a class with its collaborators given (docs/architecture.md): `Held` (held.py) holds the plan,
the store and the machine one open works on; `Follower` (follow.py) loads the machine and catches it up with the
store; `Writer` (writes.py) is the one write transaction; `ReadViews` (views.py) reads the plan's state; `Actions`
(actions.py) acts on it; `LeverRuns` (lever_runs.py) says what a run may do before it starts; `CodeMoves`
(code_moves.py) says how the code moved since a lever's runs. The Sequencer opens the store, builds them, recovers
and settles; callers reach each part by its name (`seq.views.status()`, `seq.actions.decide(...)`,
`seq.lever_runs.pick(...)`, `seq.writer.writing()`, `seq.follower.reload()`, `seq.held.lock`, `seq.code`), and
read here only the plan, the store, the machine and whether the open is read-only, which nearly every caller wants.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optseq.state.code_moves import CodeMoves
from optseq.state.first_write import made_later
from optseq.state.follow import Follower
from optseq.state.held import Held
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.plan import loader as plan_loader
from optseq.state.plan.model import Plan
from optseq.state.store.store import Store, StoreUnwritable
from optseq.state.views import ReadViews
from optseq.state.writes import Writer

if TYPE_CHECKING:
    from optseq.state.actions import Actions
    from optseq.state.lever_runs import LeverRuns
    from optseq.state.runs.host import RunHost
    from optseq.state.runs.lever_run import RunReport

class Sequencer:
    """The plan, the store and the lever machine, kept in step.

    The machine starts from the store's snapshot and replays only what was committed after it (the
    whole history only when there is no snapshot of this plan). Every write is one short store
    transaction that first catches up with what other processes committed, so a console, a shell's
    `record` and lever runs in other shells all work on one store at once.
    """

    def __init__(self, plan: Plan, store: Store):
        self.held = Held(plan, store)
        self.views = ReadViews(self.held)
        self.follower = Follower(self.held, self.views.cannot_run)
        self.writer = Writer(self.held, self.follower, self.views.lever_views)
        self.code = CodeMoves(self.held, self.writer, self.views.repo_now)
        self._plan_text = _plan_bytes(plan.path)
        self.follower.load()
        if not self.readonly:
            self._recover()
            self._settle()
        if store.degraded:
            self.held.warnings.append(store.degraded)

    @classmethod
    def open(cls, plan_path: Path | str, db_dir: Path | str, mode: str = "auto",
             on_wait: Callable[..., Any] | None = None) -> Sequencer:
        """The plan over the store at `db_dir`, opened "write", "read" or "auto" (Store.open), or "create": a
        writer whose store, where there is none, is made by its first write, so that a command refused for bad
        input leaves no folder (a typo'd --db would read as a fresh plan next time)."""
        plan = plan_loader.load(plan_path)
        later = made_later(db_dir, mode)
        store = Store.open(Path(db_dir), mode="read" if later else "write" if mode == "create" else mode,
                           on_wait=on_wait)
        try:
            seq = cls(plan, store)
        except BaseException:
            store.close()
            raise
        if later:  # only now: the open itself reads the missing store as a reader would, recovering nothing
            seq.held.creates = (Path(db_dir), on_wait)
        return seq

    # acting on the plan and starting runs are built at their first use: a read (`status`, the console's first
    # screen) does neither, and imports neither room
    @cached_property
    def actions(self) -> Actions:
        from optseq.state.actions import Actions

        return Actions(self.held, self.writer)

    @cached_property
    def lever_runs(self) -> LeverRuns:
        from optseq.state.lever_runs import LeverRuns

        return LeverRuns(self.held, self.writer, self.views.cannot_run)

    def _settle(self) -> None:
        """What a writer does once the machine is loaded under a plan: the code's moves said, a replay kept."""
        try:
            if self.plan.code_changes == "stale":
                self.code.staleness()
            self.code.branch_moves()
            if self.follower.replayed:
                with self.writer.writing():
                    pass  # keep a snapshot, so the next command need not replay the whole history again
        except StoreUnwritable as exc:
            if not getattr(self.store, "auto", False):
                raise
            self.store.read_only_now(exc)  # a reader on a full disk: reading needs none of it

    def _recover(self) -> None:
        """Runs the store found in flight with their process gone: state/recovery.py."""
        from optseq.state.recovery import recover

        recover(self.store, self.held.warnings, self._finish_from_logs)

    def _finish_from_logs(self, run_id: int) -> RunReport | None:
        """A run whose passes all ran, decided from their logs: state/runs/ is handed the run host."""
        from optseq.state.runs.finish_logs import finish_from_logs  # only when a run was found in flight

        return finish_from_logs(self.run_host, run_id)

    def reload_plan(self) -> bool:
        """Read the plan file again when it changed since it was read (an edit while `--run ready` goes, or while
        the console is open): the next lever runs what the file says now, and a lever run on the old text reads as
        edited (stale), as a fresh `optseq status` would see it. True when it had changed; PlanError (one line)
        when the edit is not a valid plan, and the plan read last stays."""
        text = _plan_bytes(self.plan.path)
        if text == self._plan_text:
            return False
        plan = plan_loader.load(self.plan.path)
        with self.held.lock:
            self.held.plan, self._plan_text = plan, text
            self.follower.replayed = False
            self.follower.load()
            if not self.readonly:
                self._settle()
        return True

    def run_lever(self, lever_id: str, *, on_event: Callable[[dict[str, Any]], Any] | None = None,
                  on_log: Callable[[str], Any] | None = None, control: Any = None,
                  watch: bool = False) -> RunReport:
        """Blocking: launch, stream, judge and decide (a watch: judge whether the adopted gain holds, deciding
        nothing); returns a lever_run.RunReport. state/runs/ is handed the run host, never the sequencer."""
        from optseq.state.runs import lever_run

        return lever_run.run_lever(self.run_host, lever_id, on_event=on_event, on_log=on_log, control=control,
                                   watch=watch)

    def close(self) -> None:
        self.held.store.close()

    def __enter__(self) -> Sequencer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the open holds (held.py): read where runs/, the CLI and the console read them -----------------
    @property
    def plan(self) -> Plan:
        return self.held.plan

    @property
    def store(self) -> Store:
        return self.held.store

    @property
    def machine(self) -> PlanMachine:
        return self.held.machine

    @property
    def readonly(self) -> bool:
        return self.held.readonly

    @property
    def run_host(self) -> RunHost:
        """What a run is given of this sequencer (state/runs/host.py's RunHost): runs/ never calls it back."""
        from optseq.state.run_host import SequencerHost

        return SequencerHost(self)


def default_db() -> Path:
    return Path(os.environ.get("OPTSEQ_DB") or ".optseq")


def _plan_bytes(path) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO put in its place would block the read: the loader names what it is
        return Path(path).read_bytes()
    except (OSError, TypeError):
        return None
