"""The one way a record reaches the store: a short transaction that first catches up with what other processes
committed, applies each record to the lever machine as it is appended, and keeps the machine's snapshot at its end,
so the next command replays nothing. A store a "create" open left for later is made by its first append here."""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from optseq.state.errors import InputError
from optseq.state.follow import Follower
from optseq.state.held import Held
from optseq.state.lifecycle import snapshot
from optseq.state.store.store import Store
from optseq.state.view_types import LeverStatus

SNAPSHOT_FIELDS = ("state", "outcome", "stale", "why_blocked")
"""What the store's `levers` table keeps of each lever's view, with each snapshot."""


class Writer:
    """Every write: `writing()` (one transaction), `append`, `update_run`, `run_ended`, `fire_points`."""

    def __init__(self, held: Held, follower: Follower, lever_views: Callable[[], list[LeverStatus]]):
        self.held = held
        self.follower = follower
        self.lever_views = lever_views
        """Every lever as status shows it (ReadViews.lever_views): a snapshot keeps their states beside it."""
        self.on_made: Callable[[], None] | None = None
        """Called once a store this open left to its first write is made (the CLI says so then)."""
        self._depth = 0
        self._first: ExitStack | None = None
        """The transaction a writing() opens at its first append, where no store is yet."""

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One store transaction for everything inside: catch up, write, then keep the machine's snapshot."""
        held = self.held
        if held.creates is not None:
            with self._first_writing():
                yield
            return
        if held.readonly:
            raise InputError(f"the store {held.store.directory} is read-only here (opened to read, or the "
                             "directory is not writable)")
        with held.lock:
            outer = self._depth == 0
            try:
                with held.store.batch():
                    if outer:
                        self.follower.catch_up()
                    self._depth += 1
                    try:
                        yield
                    finally:
                        self._depth -= 1
                    if outer:
                        self.keep_snapshot()
            except BaseException:
                if outer:
                    # the store rolled back: so must the machine, which took the records as they came
                    held.store.reload()
                    self.follower.load()
                raise
            if outer:
                self.follower.synced = held.store.ends()

    def append(self, table: str, record: dict[str, Any]) -> dict[str, Any]:
        self.first_write()
        held = self.held
        stored = held.store.append(table, record)
        derived = held.machine.apply(table, stored)
        self.fire_points(table, stored)
        self._keep(derived)
        return stored

    def update_run(self, run_id: int, fields: dict[str, Any]) -> dict[str, Any]:
        """A run record's update; a screen's kept in the run index too: the snapshot holds its blocks and looks."""
        runs = self.held.machine.runs
        if runs.is_screen(run_id):
            runs.screen({"id": run_id, **fields})
        return self.held.store.update("runs", run_id, fields)

    def _keep(self, derived: list[dict[str, Any]]) -> None:
        """Store the events the machine derived (stale, superseded): history, not new moves on replay."""
        for event in derived:
            self.held.store.append("events", event)

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None,
                  record: dict[str, Any] | None = None) -> None:
        """A live run's final record (`record`, with its id) is written: move the lever as it does on replay."""
        self._keep(self.held.machine.run_ended(lever_id, status, verdict, record))

    def fire_points(self, table: str, record: dict[str, Any]) -> None:
        trigger = {"decisions": "decided", "events": "planned" if record.get("type") == "plan" else None,
                   "runs": "measured" if record.get("status") == "succeeded" else None}.get(table)
        if trigger is None:
            return
        held = self.held
        for point in held.plan.decision_points:
            if point.lever == record.get("lever") and point.on == trigger:
                fired = held.store.append("events", {"type": "decision_point", "point": point.id,
                                                     "lever": point.lever, "reopens": list(point.reopens),
                                                     "text": point.text})
                held.machine.fired[point.id] = fired["at"]

    def keep_snapshot(self) -> None:
        held = self.held
        for view in self.lever_views():
            held.store.upsert("levers", "lever", {"lever": view.id, **{k: getattr(view, k) for k in SNAPSHOT_FIELDS}})
        held.store.put_snapshot(snapshot.dump(held.machine, held.plan))

    def imported(self, lines: list[tuple[str, dict[str, Any]]]) -> None:
        """Another writer's records, as the store's open batch has just written them (optseq sync; `since`'s lines):
        the machine follows them and its snapshot is kept in that batch, so the first command after a large sync
        replays nothing. The caller closes this open after the batch (its `synced` is from before it)."""
        with self.held.lock:
            self.follower.catch_up()  # what other processes committed before the batch began
            self.follower.follow(lines)
            self.keep_snapshot()

    # -- a store made by its first write (first_write.py) ------------------------------------------------
    def first_write(self) -> None:
        """Make the store a "create" open left for now, and open the transaction of the writing() inside which it
        is made there, caught up with what another process may have written meanwhile."""
        held = self.held
        if held.creates is None:
            return
        with held.lock:
            if held.creates is None:  # another thread's write made it while this one waited for the lock
                return
            directory, on_wait = held.creates
            store = Store.open(directory, mode="write", on_wait=on_wait)
            held.store.close()
            held.store, held.creates = store, None
            if self._first is not None:
                self._first.enter_context(store.batch())
                self.follower.catch_up()
            if self.on_made is not None:
                self.on_made()

    @contextmanager
    def _first_writing(self) -> Iterator[None]:
        """writing() where no store is yet: the block checks its input against the empty store it reads, and its
        first append makes the store and the transaction (first_write); a block refused before it made nothing."""
        held = self.held
        with held.lock:
            outer = self._depth == 0
            if outer:
                self._first = ExitStack()
            self._depth += 1
            try:
                try:
                    yield
                finally:
                    self._depth -= 1
                if outer and held.creates is None:
                    self.keep_snapshot()
            except BaseException:
                if outer:
                    first, self._first = self._first, None
                    if held.creates is None and first is not None:  # made: the store rolls back, and the machine
                        first.__exit__(*sys.exc_info())
                        held.store.reload()
                        self.follower.load()
                raise
            if outer:
                first, self._first = self._first, None
                try:
                    if first is not None:
                        first.close()  # the commit
                except BaseException:
                    held.store.reload()
                    self.follower.load()
                    raise
                if held.creates is None:
                    self.follower.synced = held.store.ends()
