"""Several levers of a group measured at once (on a cluster, one per node), each decided as it lands.

Used by `--run ready --parallel N` and by the console's parallel run. Each run takes the stack as it is when
it starts, and its decision is applied the moment it ends; a lever one of them made ready (or stale) joins
as soon as a slot is free. The pick happens under the sequencer's lock, against the state every finished
run left, so decisions land in dependency order whatever order the runs finish in.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Callable

from optseq.state.errors import InputError
from optseq.state.runs.host import RunHost
from optseq.state.runs.lever_run import RunControl, RunReport, run_lever

Sinks = Callable[[str], tuple]
"""lever id → (on_event, on_log) for its run."""


@dataclass
class Landed:
    """One run of the group ended: its report, or why it did not run."""

    lever: str
    report: RunReport | None
    refused: str | None = None


class GroupRun:
    """Up to `width` levers of `target` (ready | stale | watch) at once; `cancel()` from any thread stops them all."""

    def __init__(self, host: RunHost, target: str, width: int, sinks: Sinks,
                 on_started: Callable[[str, int], None] | None = None,
                 on_landed: Callable[[Landed], None] | None = None):
        if target not in ("ready", "stale", "watch"):
            raise InputError(f"a parallel run takes ready, stale or watched levers, not {target!r}")
        self.host, self.target, self.width, self.sinks = host, target, max(1, width), sinks
        self.on_started = on_started or (lambda lever, running: None)
        self.on_landed = on_landed or (lambda landed: None)
        self.control = RunControl()
        self.running: dict[str, RunControl] = {}
        self._lock = threading.Lock()
        self._finished: queue.Queue = queue.Queue()

    def cancel(self) -> None:
        self.control.cancel()
        with self._lock:
            for own in self.running.values():
                own.cancel()

    def cancel_one(self, lever_id: str) -> bool:
        """Stop one lever's run, the group going on with the rest; False when that lever is not running."""
        with self._lock:
            own = self.running.get(lever_id)
        if own is None:
            return False
        own.cancel()
        return True

    def run(self) -> list[RunReport]:
        """Blocking until every run has landed and no lever of the group is left to start."""
        reports: list[RunReport] = []
        ran: list[str] = []
        threads: dict[str, threading.Thread] = {}
        while True:
            while len(threads) < self.width and not self.control.cancelled:
                with self.host.lock:
                    lever_id = self.host.pick(self.target, done=ran + list(threads))
                if lever_id is None:
                    break
                ran.append(lever_id)
                own = RunControl()
                with self._lock:
                    self.running[lever_id] = own
                thread = threading.Thread(target=self._one, args=(lever_id, own), name=f"run-{lever_id}",
                                          daemon=True)
                threads[lever_id] = thread
                self.on_started(lever_id, len(threads))
                thread.start()
            if not threads:
                return reports
            landed = self._next_landed()
            threads.pop(landed.lever).join()
            with self._lock:
                self.running.pop(landed.lever, None)
            if landed.report is not None:
                reports.append(landed.report)
            self.on_landed(landed)

    def _next_landed(self) -> Landed:
        while True:
            if self.control.cancelled:
                self.cancel()  # a run started after the cancel came in is stopped too
            try:
                return self._finished.get(timeout=0.2)
            except queue.Empty:
                continue

    def _one(self, lever_id: str, own: RunControl) -> None:
        on_event, on_log = self.sinks(lever_id)
        try:
            report = run_lever(self.host, lever_id, on_event=on_event, on_log=on_log, control=own,
                               watch=self.target == "watch")
            self._finished.put(Landed(lever_id, report))
        except InputError as exc:  # refused at its start: a run that ended meanwhile closed or took it
            self._finished.put(Landed(lever_id, None, str(exc)))
        except BaseException as exc:  # never leave the loop waiting on a thread that died
            self._finished.put(Landed(lever_id, None, f"{type(exc).__name__}: {exc}"))
