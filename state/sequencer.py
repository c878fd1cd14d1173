"""The one API the CLI and the console call: plan + store + machine kept in step; actions and views mixed in."""
from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from optseq.state import branch_views
from optseq.state.actions import Actions
from optseq.state.errors import InputError
from optseq.state.first_write import FirstWrite, made_later
from optseq.state.lifecycle import snapshot
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import DECIDED
from optseq.state.lifecycle.words import say, text
from optseq.state.plan import loader as plan_loader
from optseq.state.plan.model import Plan
from optseq.state.store.inflight import FINAL
from optseq.state.store.store import Store, StoreUnwritable
from optseq.state.views import ReadViews, code_moved, evidence_runs

if TYPE_CHECKING:
    from optseq.state.runs.host import RunHost

REPLAYED = ("facts", "criteria", "decisions", "runs", "events")
"""Tables whose records drive the machine, replayed together in `seq` order."""


class Sequencer(Actions, ReadViews, FirstWrite):
    """The plan, the store and the lever machine, kept in step.

    The machine starts from the store's snapshot and replays only what was committed after it (the
    whole history only when there is no snapshot of this plan). Every write is one short store
    transaction that first catches up with what other processes committed, so a console, a shell's
    `record` and lever runs in other shells all work on one store at once.
    """

    def __init__(self, plan: Plan, store: Store):
        self.plan = plan
        self.store = store
        self.lock = threading.RLock()
        """Held around every store access: the console reads on its UI thread while a run writes."""
        self.warnings: list[str] = []
        self._depth = 0
        self._synced: dict[str, int] = {}
        """The journals' ends the machine reflects."""
        self._replayed = False
        self._plan_text = _plan_bytes(plan.path)
        self._creates = self._first = None  # first_write.py's
        self.on_made: Callable[[], None] | None = None
        """Called once a store this open left to its first write is made (the CLI says so then)."""
        self.machine = self._load()
        if not self.readonly:
            self._recover()
            self._settle()
        if getattr(store, "degraded", None):
            self.warnings.append(store.degraded)

    def _settle(self) -> None:
        """What a writer does once the machine is loaded under a plan: the code's moves said, a replay kept."""
        try:
            if self.plan.code_changes == "stale":
                self._code_staleness()
            self.code_moves()
            if self._replayed:
                with self.writing():
                    pass  # keep a snapshot, so the next command need not replay the whole history again
        except StoreUnwritable as exc:
            if not getattr(self.store, "auto", False):
                raise
            self.store.read_only_now(exc)  # a reader on a full disk: reading needs none of it

    def reload_plan(self) -> bool:
        """Read the plan file again when it changed since it was read (an edit while `--run ready` goes, or while
        the console is open): the next lever runs what the file says now, and a lever run on the old text reads as
        edited (stale), as a fresh `optseq status` would see it. True when it had changed; PlanError (one line)
        when the edit is not a valid plan, and the plan read last stays."""
        text = _plan_bytes(self.plan.path)
        if text == self._plan_text:
            return False
        plan = plan_loader.load(self.plan.path)
        with self.lock:
            self.plan, self._plan_text = plan, text
            self._replayed = False
            self.machine = self._load()
            if not self.readonly:
                self._settle()
        return True

    @classmethod
    def open(cls, plan_path: Path | str, db_dir: Path | str, mode: str = "auto", on_wait=None) -> "Sequencer":
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
        if later:
            seq._creates = (Path(db_dir), on_wait)
        return seq

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Sequencer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def readonly(self) -> bool:
        return bool(getattr(self.store, "readonly", False)) and self._creates is None

    # -- replay ----------------------------------------------------------------------------
    def records(self) -> dict[str, list[dict]]:
        """Every stored record of the tables that drive the machine (reads the whole history)."""
        return {table: self.store.all(table) for table in REPLAYED}

    def _load(self) -> PlanMachine:
        saved = self.store.snapshot()
        machine = snapshot.load(self.plan, (saved or {}).get("data"))
        if machine is None:
            self._synced, self._replayed = self.store.ends(), True
            machine = self._replay()
        else:
            self.machine, self._synced = machine, dict(saved.get("ends") or {})
            self._catch_up()
        machine.cannot_run = self.cannot_run  # git's answer, which the machine cannot ask
        return machine

    def cannot_run(self, lever_id: str) -> str | None:
        """Why a lever otherwise ready cannot run (a branch merged before it ran: branch_views.py), git asked once per
        process and store change; None for one that can. The machine's `next` asks it too."""
        return branch_views.cannot_run(self.plan, self.machine, lever_id, self.__dict__.setdefault("repo_cache", {}))

    def _replay(self) -> PlanMachine:
        machine = PlanMachine(self.plan)
        rows = [(r["seq"], table, r) for table, recs in self.records().items() for r in recs]
        for _, table, record in sorted(rows, key=lambda row: row[0]):
            if self._known(table, record):
                self._apply_quietly(machine, table, record)
        return machine

    def _known(self, table: str, record: dict) -> bool:
        lever = record.get("lever")
        if lever is not None and not self.plan.has_lever(lever):
            self.warnings.append(f"{table} record {record.get('id')} names lever {lever!r}, "
                                 f"which the plan no longer has; kept in history, ignored")
            return False
        if table == "facts" and not any(f.id == record.get("name") for f in self.plan.facts):
            self.warnings.append(f"fact {record.get('name')!r} is not in the plan; ignored")
            return False
        return True

    def _apply_quietly(self, machine: PlanMachine, table: str, record: dict) -> None:
        try:
            machine.apply(table, record)
        except Exception as exc:  # a record the current plan cannot replay must not lose the rest
            self.warnings.append(f"{table} record {record.get('id')} could not be replayed: {exc}")

    def _catch_up(self) -> None:
        """Apply what was committed after the ends the machine reflects, line by line as it happened.

        Their derived events are already stored by whoever wrote them, so what this derives is dropped.
        """
        self._follow(self.store.since(self._synced))
        self._synced = self.store.ends()

    def imported(self, lines: list[tuple[str, dict]]) -> None:
        """Another writer's records, as the store's open batch has just written them (optseq sync; `since`'s lines):
        the machine follows them and its snapshot is kept in that batch, so the first command after a large sync
        replays nothing. The caller closes this sequencer after the batch (its `_synced` is from before it)."""
        with self.lock:
            self._catch_up()  # what other processes committed before the batch began
            self._follow(lines)
            self._keep_snapshot()

    def _follow(self, lines) -> None:
        for table, line in lines:
            fields = line.get("r") or {}
            if line["op"] == "u":
                if table == "runs" and self.machine.runs.is_compare(line["id"]):
                    self.machine.runs.compare({"id": line["id"], **fields})
                    continue
                if table == "runs" and self.machine.runs.is_screen(line["id"]):
                    self.machine.runs.screen({"id": line["id"], **fields})  # its blocks and looks as they come
                levers = self.machine.runs.levers_of(line["id"]) if table == "runs" else []
                # a screen's run holds each of its levers: its end moves every one, by its own verdict
                screen = fields.get("screen") if isinstance(fields.get("screen"), dict) else {}
                verdicts, whys = screen.get("verdicts") or {}, screen.get("whys") or {}
                for lever in levers if fields.get("status") in FINAL else ():
                    self.machine.run_ended(lever, fields["status"], verdicts.get(lever, fields.get("verdict")),
                                           {"id": line["id"], **fields,
                                            "detail": whys.get(lever, fields.get("detail"))})
                continue
            record = {"id": line["id"], **fields, "seq": line.get("seq"), "at": line.get("at")}
            if self._known(table, record):
                self._apply_quietly(self.machine, table, record)

    def reload(self) -> bool:
        """Follow other processes: catch up with what they committed. True when something had changed."""
        with self.lock:
            # any read of the hot file (a status listing runs in flight) may have taken the new commit in
            # already: the journals' ends, not the file's signature, say whether the machine is behind
            if not self.store.refresh() and self.store.ends() == self._synced:
                return False
            self._catch_up()
            self.__dict__.pop("repo_cache", None)  # a run landed: ask git again
            return True

    refresh = reload

    # -- writes ------------------------------------------------------------------------------
    def _recover(self) -> None:
        """Runs the store found in flight with their process gone: state/recovery.py."""
        from optseq.state.recovery import recover

        recover(self)

    def _code_staleness(self) -> None:
        """With `code_changes = "stale"`, a lever whose workload code moved since its run goes stale, naming how."""
        moved = []
        for lever_id, model in self.machine.models.items():
            if model.state not in (*DECIDED, "measured"):
                continue
            for run_id in evidence_runs(model):
                was = self.machine.runs.fingerprint(run_id).get("repo")
                how = code_moved(was, self.repo_now(was["root"])) if isinstance(was, dict) else None
                if how:
                    moved.append((lever_id, say("code_changed", run=run_id, how=how)))
                    break
        if moved:
            with self.writing():
                for lever_id, said in moved:
                    self.append("events", {"type": "stale", "lever": lever_id, "reason": text(said), "said": said})

    def code_moves(self) -> list[dict]:
        """Branch levers whose code moved since their run: an adopted commit merged (`landed`) or taken out again,
        a branch or base that moved (`stale`); the events are appended, and returned. Git is asked first without
        the store's lock, and again under it only when something moved (another process may have said it)."""
        if self.readonly or not any(l.arms is not None and l.arms.branch for l in self.plan.levers):
            return []
        from optseq.state.code import landing

        self.__dict__.pop("repo_cache", None)  # what the views asked git (a baseline that moved) is asked again

        if not landing.events(self.machine, self.plan):
            return []
        with self.writing():
            found = landing.events(self.machine, self.plan)
            for event in found:
                self.append("events", event)
        return found

    def detached_runs(self) -> list[dict]:
        """Runs on a cluster whose optseq is gone: {run, lever, submission_id}; `run_lever` re-attaches to them."""
        return self.store.detached_runs()

    @contextmanager
    def writing(self):
        """One store transaction for everything inside: catch up, write, then keep the machine's snapshot."""
        if self._creates is not None:
            with self._first_writing():
                yield
            return
        if self.readonly:
            raise InputError(f"the store {self.store.directory} is read-only here (opened to read, or the "
                             "directory is not writable)")
        with self.lock:
            outer = self._depth == 0
            try:
                with self.store.batch():
                    if outer:
                        self._catch_up()
                    self._depth += 1
                    try:
                        yield
                    finally:
                        self._depth -= 1
                    if outer:
                        self._keep_snapshot()
            except BaseException:
                if outer:
                    # the store rolled back: so must the machine, which took the records as they came
                    self.store.reload()
                    self.machine = self._load()
                raise
            if outer:
                self._synced = self.store.ends()

    def append(self, table: str, record: dict) -> dict:
        self._first_write()
        stored = self.store.append(table, record)
        derived = self.machine.apply(table, stored)
        self.fire_points(table, stored)
        self._keep(derived)
        return stored

    def update_run(self, run_id: int, fields: dict) -> dict:
        """A run record's update; a screen's kept in the run index too: the snapshot holds its blocks and looks."""
        if self.machine.runs.is_screen(run_id):
            self.machine.runs.screen({"id": run_id, **fields})
        return self.store.update("runs", run_id, fields)

    def _keep(self, derived: list[dict]) -> None:
        """Store the events the machine derived (stale, superseded): history, not new moves on replay."""
        for event in derived:
            self.store.append("events", event)

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None, record: dict | None = None) -> None:
        """A live run's final record (`record`, with its id) is written: move the lever as it does on replay."""
        self._keep(self.machine.run_ended(lever_id, status, verdict, record))

    def fire_points(self, table: str, record: dict) -> None:
        trigger = {"decisions": "decided", "events": "planned" if record.get("type") == "plan" else None,
                   "runs": "measured" if record.get("status") == "succeeded" else None}.get(table)
        if trigger is None:
            return
        for point in self.plan.decision_points:
            if point.lever == record.get("lever") and point.on == trigger:
                fired = self.store.append("events", {"type": "decision_point", "point": point.id,
                                                     "lever": point.lever, "reopens": list(point.reopens),
                                                     "text": point.text})
                self.machine.fired[point.id] = fired["at"]

    def _keep_snapshot(self) -> None:
        for view in self.lever_views():
            self.store.upsert("levers", "lever", {"lever": view["id"], **{k: view[k] for k in
                                                  ("state", "outcome", "stale", "why_blocked")}})
        self.store.put_snapshot(snapshot.dump(self.machine, self.plan))

    @property
    def run_host(self) -> RunHost:
        """What a run is given of this sequencer (state/runs/host.py's RunHost): runs/ never calls it back."""
        from optseq.state.run_host import SequencerHost

        return SequencerHost(self)

    def lever(self, lever_id: str):
        try:
            return self.plan.lever(lever_id)
        except KeyError:
            from optseq.state.plan.fields import did_you_mean

            ids = [l.id for l in self.plan.levers]
            raise InputError(f"unknown lever {lever_id!r}{did_you_mean(lever_id, ids)} (plan {self.plan.path} has: "
                             f"{', '.join(ids)})") from None


def default_db() -> Path:
    return Path(os.environ.get("OPTSEQ_DB") or ".optseq")


def _plan_bytes(path) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO put in its place would block the read: the loader names what it is
        return Path(path).read_bytes()
    except (OSError, TypeError):
        return None
