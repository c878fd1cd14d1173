"""The live run: progress bar, running estimate, samples and a bounded log, fed by a thread worker."""
from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Label, Log, ProgressBar, Static

from optseq.console.tui.widgets.compare_list import CompareList
from optseq.console.tui.widgets.cut_log import CutLog
from optseq.console.words.figures import estimate_text, ratio
from optseq.console.tui.widgets.group_rows import GroupReport, GroupRows, rows_text
from optseq.console.tui.widgets.reported import Reported
from optseq.console.tui.widgets.run_tally import Tally
from optseq.state.api import Run, RunProgress, terminal_safe

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from optseq.state.api import GroupRun, KeptCompare, RunControl, Sequencer

LOG_LINES = 500
"""Log lines kept on screen and in the hand-over queue; the full log is the run's file."""


class _Latest(Message):
    """A message of which one pending is enough: a newer one replaces it in the queue (many samples, one repaint)."""

    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


class RunPanel(Vertical):
    """One run at a time. `start` launches it on a thread worker; `cancel` ends its process group."""

    DEFAULT_CSS = "RunPanel.-idle #run-progress-row { display: none; }"
    """Idle, there is no bar at all: an empty indeterminate one animates as if something were running."""

    @dataclass
    class Progress(_Latest):
        done: float
        total: float | None
        msg: str

    @dataclass
    class Estimate(_Latest):
        event: dict

    class SamplesChanged(_Latest):
        """The tally moved; one pending repaint is enough however many samples arrived."""

    class LogReady(_Latest):
        """Lines wait in the panel's queue; one pending drain takes them all."""

    @dataclass
    class Started(Message):
        lever: str

    class RowsChanged(_Latest):
        """A run of a parallel group moved; one pending repaint of the rows is enough."""

    @dataclass
    class Landed(Message):
        """One run of a parallel group ended (the group goes on): `report`, or `error` when it did not run."""

        lever: str
        report: Reported | None
        error: str | None = None

    @dataclass
    class Finished(Message):
        """The run ended: `report` is the state's RunReport, or None with `error` when it could not run."""

        lever: str
        report: Reported | None
        error: str | None = None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lever: str | None = None
        """The lever running now, None when idle."""
        self.last_report: Reported | None = None
        self.group_rows = GroupRows()
        self._control: RunControl | None = None
        """The RunControl of the run going on (state.runs.lever_run, imported when a run starts)."""
        self._group: GroupRun | None = None
        """The parallel group running now (start_group), whose runs x can stop one at a time."""
        self._lines: deque[str] = deque(maxlen=LOG_LINES)
        self._tally = Tally()
        self._idle = threading.Event()
        """Set whenever no worker is inside run_lever; what quitting waits on."""
        self._idle.set()
        self._progress = RunProgress()
        """The run's count over all its passes; written by the worker thread only, shown through messages."""
        self._seq: Sequencer | None = None
        """The Sequencer of the group under way, for each lever's rule."""
        self.add_class("-idle", update=False)  # styled as it is registered: none before (it is not mounted yet)
        self._built = False
        """The panel's parts are mounted (`_build`)."""
        self._store_view: tuple[list[Run], bool, list[KeptCompare], bool] | None = None
        """What show_store was last given, drawn once the parts are there."""

    def compose(self) -> ComposeResult:
        # nothing in the first frame, where the Run tab is behind the Detail tab: the parts (a dozen widgets to
        # style and lay out) are mounted a frame after it, or at once when a run starts before that
        return iter(())

    def on_mount(self) -> None:
        self.call_after_refresh(self._build)

    def on_show(self) -> None:
        self._build()

    def _build(self) -> None:
        """Mount the parts (they are in the DOM, to be queried and updated, as soon as this returns)."""
        if self._built or not self.is_attached:
            return
        row = Horizontal(id="run-progress-row")
        # the compares under the log, newest first: where the pane is short (a long plan at 24 rows, a run's
        # progress row) the oldest are cut, never the run's log below its two lines
        self.mount_all([Label("no run yet", id="run-title"), row, Static("", id="run-rows"),
                        Static("estimate: -", id="run-estimate"), Static("samples: none yet", id="run-samples"),
                        CutLog(max_lines=LOG_LINES, id="run-log"), CompareList(id="run-compares")])
        if not row.is_attached:  # a panel being closed (a quit typed ahead of the frame) mounts nothing
            return
        self._built = True
        # into the row once it is in the DOM: children given to its constructor would come with its own mount, later
        row.mount_all([ProgressBar(total=None, show_eta=False, id="run-progress"), Label("", id="run-progress-msg")])
        if self._store_view is not None:
            self.show_store(*self._store_view)

    # -- commands from the UI thread -----------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.lever is not None

    @property
    def running_levers(self) -> set[str]:
        """Every lever with a run under way from this console."""
        if self.group_rows.rows:
            return self.group_rows.running()
        return {self.lever} if self.lever else set()

    def show_store(self, runs: list[Run], readonly: bool, compares: Sequence[KeptCompare] = (),
                   testbeds: bool = False) -> None:
        """The newest compares (each naming its testbed where the store holds several); idle and before any run of
        this console, what the store holds, and how to start a run if one can."""
        self._store_view = (runs, readonly, list(compares), testbeds)
        if not self._built:
            return
        self.query_one(CompareList).show(list(compares), testbeds)
        if self.running or self.last_report is not None:
            return
        latest = max(runs, key=lambda r: r.id or 0, default=None)  # the views' latest_runs, typed
        held = "no run in this store yet"
        if latest is not None:
            figure = estimate_text(latest.stats, wide=True)
            held = " ".join(p for p in (f"last run #{latest.id}", str(latest.lever or ""),
                                        str(latest.status or ""), figure if figure != "-" else "") if p)
        how = "read-only: this console cannot run levers" if readonly else "r runs the selected lever, n the next one"
        self.query_one("#run-title", Label).update(f"{held} · {how}")

    def start(self, seq: Sequencer, lever_id: str) -> None:
        if not self.is_attached:  # its tab mounts a frame after the first paint: first in its queue, it starts then
            self.call_later(self.start, seq, lever_id)
            return
        self._reset(lever_id, f"{lever_id}: starting…")
        try:
            self._progress = RunProgress.of(seq.plan.lever(lever_id))
        except Exception:  # an unknown lever: the run itself says so in its Finished message
            self._progress = RunProgress()
        self._control = _control()
        self._run(seq, lever_id, self._control)
        self.post_message(self.Started(lever_id))

    def start_group(self, seq: Sequencer, target: str, width: int) -> None:
        """Up to `width` levers of `target` at once (state/runs/parallel.py), a row each."""
        from optseq.state.api import GroupRun

        label = f"{target} ×{width}"
        self._reset(label, f"{label}: picking levers…")
        self._seq = seq
        group = GroupRun(seq.run_host, target, width, self._sinks, on_started=self._group_started,
                         on_landed=self._group_landed)
        control = self._control = _control()
        control.attach(group)
        self._group = group
        self.add_class("-group")
        self._run_group(group, label)
        self.post_message(self.Started(label))

    def _reset(self, lever: str, title: str) -> None:
        self._build()
        self.lever = lever
        self.group_rows.clear()
        self.remove_class("-group")
        self._tally = Tally()
        self._progress = RunProgress()
        self._lines.clear()
        self.query_one("#run-log", Log).clear()
        self.query_one("#run-title", Label).update(title)
        self.query_one("#run-progress", ProgressBar).update(total=None, progress=0)
        self.query_one("#run-progress-msg", Label).update("")
        self.query_one("#run-rows", Static).update("")
        self.query_one("#run-estimate", Static).update("estimate: -")
        self.query_one("#run-samples", Static).update("samples: none yet")
        self.set_class(True, "-running")
        self.remove_class("-failed", "-ok", "-idle")
        self._idle.clear()

    def cancel(self, lever_id: str | None = None) -> bool:
        """Ask the run to stop (SIGTERM to its group, SIGKILL after the grace); False when idle. In a parallel
        group, `lever_id` (one of its runs) stops that run alone and the group goes on."""
        if self._control is None or not self.running:
            return False
        group = self._group if self.group_rows.rows else None
        if group is not None and lever_id is not None and group.cancel_one(lever_id):
            self._on_log(f"[optseq] {lever_id}: cancelling (the others go on)")
            return True
        self._control.cancel()
        self.query_one("#run-title", Label).update(f"{self.lever}: cancelling…")
        return True

    async def wait(self) -> None:
        """Until the worker has returned from run_lever (the process group is gone by then)."""
        while not self._idle.is_set():
            await asyncio.sleep(0.05)

    def stop(self, timeout: float) -> bool:
        """Cancel and block until the run has ended: the last resort when the app closes under a run."""
        if self._control is not None:
            self._control.cancel()
        return self._idle.wait(timeout)

    # -- the worker thread -------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run(self, seq, lever_id: str, control) -> None:
        # Every exception becomes a Finished message: a failing run must never take the console down.
        try:
            report = seq.run_lever(lever_id, on_event=self._on_event, on_log=self._on_log, control=control)
        except Exception as exc:  # InputError, StoreError, a bug: all one line for the user
            self.post_message(self.Finished(lever_id, None, str(exc) or type(exc).__name__))
        else:
            self.post_message(self.Finished(lever_id, report))
        finally:
            self._idle.set()

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run_group(self, group, label: str) -> None:
        try:
            reports = group.run()
        except Exception as exc:
            self.post_message(self.Finished(label, None, str(exc) or type(exc).__name__))
        else:
            self.post_message(self.Finished(label, GroupReport(reports, self.group_rows.rows)))
        finally:
            self._idle.set()

    def _sinks(self, lever_id: str):
        def on_event(event: dict) -> None:
            self.group_rows.event(lever_id, event, self._tally)
            self.post_message(self.RowsChanged())

        def on_log(line: str) -> None:
            self._on_log(f"[{lever_id}] {line}")

        return on_event, on_log

    def _group_started(self, lever_id: str, running: int) -> None:
        self.group_rows.started(lever_id, self._lever_progress(lever_id))
        self._on_log(f"[optseq] {lever_id}: started ({running} running)")
        self.post_message(self.RowsChanged())
        self.post_message(self.Started(lever_id))  # the screen shows it running

    def _lever_progress(self, lever_id: str) -> RunProgress:
        try:
            return RunProgress.of(self._seq.plan.lever(lever_id)) if self._seq is not None else RunProgress()
        except Exception:  # an unknown lever: its run says so when it lands
            return RunProgress()

    def _group_landed(self, landed) -> None:
        self.group_rows.landed(landed)
        self.post_message(self.Landed(landed.lever, landed.report, landed.refused))
        self.post_message(self.RowsChanged())

    def _on_event(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "progress":
            self._progress.progress(event.get("done"), event.get("total"))
            self.post_message(self.Progress(self._progress.done, self._progress.total or None,
                                            " ".join(p for p in (self._progress.text(),
                                                                 self._progress.message(event.get("msg"))) if p)))
        elif kind == "sample":
            self._progress.sample(event)
            self._tally.add(event)
            self.post_message(self.SamplesChanged())
        elif kind == "estimate":
            self.post_message(self.Estimate(dict(event)))
        elif kind in ("unavailable", "quality", "criterion", "env"):
            fields = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
            self._on_log(f"[{kind}] {fields}")

    def _on_log(self, line: str) -> None:
        self._lines.append(terminal_safe(line))  # a lever's escapes would reach the terminal through the screen
        self.post_message(self.LogReady())

    # -- handlers on the UI thread -----------------------------------------------------------
    def on_run_panel_progress(self, message: Progress) -> None:
        message.stop()
        self.query_one("#run-progress", ProgressBar).update(total=message.total, progress=message.done)
        self.query_one("#run-progress-msg", Label).update(f" {message.msg}")
        self._say_running()

    def _say_running(self) -> None:
        """Anything from the command means it is no longer `starting…`."""
        if self.lever is not None and not self.group_rows.rows and not self._control_cancelled():
            self.query_one("#run-title", Label).update(f"{self.lever}: running")

    def _control_cancelled(self) -> bool:
        return self._control is not None and self._control.cancelled

    def on_run_panel_estimate(self, message: Estimate) -> None:
        message.stop()
        ev = message.event
        ci = ""
        if isinstance(ev.get("ci_low"), (int, float)) and isinstance(ev.get("ci_high"), (int, float)):
            ci = f" [{ratio(ev['ci_low'])}, {ratio(ev['ci_high'])}]"
        metric = f" {ev['metric']}" if ev.get("metric") else ""
        self.query_one("#run-estimate", Static).update(
            f"estimate:{metric} {ratio(ev.get('estimate', 0), 3)}×{ci} over {ev.get('n')} pairs")

    def on_run_panel_samples_changed(self, message: SamplesChanged) -> None:
        message.stop()
        self.query_one("#run-samples", Static).update(self._tally.text())
        self._say_running()

    def on_run_panel_rows_changed(self, message: RowsChanged) -> None:
        message.stop()
        rows = self.group_rows.snapshot()
        self.query_one("#run-rows", Static).update(rows_text(rows))
        done = sum(r["done"] for r in rows.values())
        total = sum(r["total"] for r in rows.values())
        if total:
            self.query_one("#run-progress", ProgressBar).update(total=total, progress=done)
        running = [k for k, r in rows.items() if r["status"] == "running"]
        if self.lever is not None:
            self.query_one("#run-title", Label).update(
                f"{self.lever}: {len(running)} running ({', '.join(running) or 'none'}), {len(rows) - len(running)} landed")
        self.query_one("#run-samples", Static).update(self._tally.text())

    def on_run_panel_log_ready(self, message: LogReady) -> None:
        message.stop()
        lines = []
        while self._lines:
            try:
                lines.append(self._lines.popleft())
            except IndexError:
                break
        if lines:
            self.query_one("#run-log", Log).write_lines(lines)

    def on_run_panel_finished(self, message: Finished) -> None:
        # not stopped: the screen refreshes the table and says how it ended
        self.on_run_panel_log_ready(self.LogReady())
        self.lever = None
        self.last_report = message.report
        self.set_class(False, "-running")
        report = message.report
        ok = report is not None and report.status == "succeeded"
        bar = self.query_one("#run-progress", ProgressBar)
        if bar.total is None:  # nothing was counted: a bar left indeterminate would animate on an idle tab
            bar.update(total=1, progress=1 if ok else 0)
        elif ok:
            bar.update(progress=bar.total)
        if report is None:
            self.query_one("#run-title", Label).update(f"{message.lever}: could not run: {message.error}")
            self.add_class("-failed")
            return
        self.set_class(ok, "-ok")
        self.set_class(not ok, "-failed")
        if isinstance(report, GroupReport):
            self.query_one("#run-title", Label).update(f"{message.lever}: {report.message}")
            return
        # `run #1 cancelled: fast: cancelled` said it twice: a message that only repeats the status names the lever
        said = report.message.removeprefix(f"{message.lever}: ")
        message_text = message.lever if said == report.status else report.message
        self.query_one("#run-title", Label).update(f"run #{report.run_id} {report.status}: {message_text}")


def _control() -> RunControl:
    from optseq.state.api import RunControl  # with the run machinery: not before the first paint

    return RunControl()
