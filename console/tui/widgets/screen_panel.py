"""The Screen tab: a screen (`optseq --run screen` on the default levers) run from the console on a thread worker,
its design and progress (blocks done of the most its budget allows, the block and run under way) as it runs, each
lever's effect and call when it ends, and a 2×2 interaction plot for each interaction it names. Idle, it shows the
newest screen the store holds."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Label, ProgressBar, Static

from optseq.console.tui.widgets.interaction_plot import InteractionPlot
from optseq.console.tui.widgets.reported import Reported
from optseq.state.api import screened
from optseq.state.api import terminal_safe

if TYPE_CHECKING:
    from optseq.state.api import RunControl
    from optseq.state.api import Sequencer


class ScreenPanel(VerticalScroll):
    """One screen at a time. `start` runs it on a thread worker; `cancel` ends its launches' process groups."""

    DEFAULT_CSS = """
    ScreenPanel #screen-progress-row { height: 1; display: none; }
    ScreenPanel.-running #screen-progress-row { display: block; }
    ScreenPanel #screen-plots { height: auto; layout: horizontal; }
    ScreenPanel Static { height: auto; }
    """

    @dataclass
    class Moved(Message):
        """A sample came back or a pass moved: the progress line is redrawn (one pending redraw is enough)."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ScreenPanel.Moved)

    @dataclass
    class Ended(Message):
        report: Reported | None
        error: str | None = None

    def __init__(self, seq: Callable[[], Sequencer], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._seq = seq
        """The console's Sequencer as it is now (a read-only console that takes over opens another)."""
        self.screen_run = None
        """The screen under way (state.runs.screen_run.Screen), None when idle."""
        self._control: RunControl | None = None
        self._samples: list[screened.Sample] = []
        self._current: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._shown: tuple | None = None
        """(run id, status, blocks) of the screen shown idle: a refresh that finds the same one draws nothing."""

    def compose(self):
        yield Label("no screen yet · s screens the ready levers that compose", id="screen-title")
        with Horizontal(id="screen-progress-row"):
            yield ProgressBar(total=None, show_eta=False, id="screen-progress")
        yield Static("", id="screen-where", markup=False)
        yield Static("", id="screen-effects", markup=False)
        yield Static("", id="screen-said", markup=False)
        yield Vertical(id="screen-plots")

    @property
    def running(self) -> bool:
        return self.screen_run is not None

    # -- commands from the UI thread -----------------------------------------------------------
    def start(self, seq, screen) -> None:
        from optseq.state.api import RunControl  # the run machinery: not before a screen starts

        self.screen_run, self._control, self._samples, self._current = screen, RunControl(), [], None
        self._idle.clear()
        self.add_class("-running")  # idle, no bar: an empty one would animate as if something ran
        ids = ", ".join(screen.screened.ids)
        self.query_one("#screen-title", Label).update(f"screen {ids}: {screen.design.text()}")
        self.query_one("#screen-progress", ProgressBar).update(total=screen.max_blocks * screen.design.block_runs,
                                                              progress=0)
        self._where()
        for part in ("#screen-effects", "#screen-said"):
            self.query_one(part, Static).update("")
        self.query_one("#screen-plots", Vertical).remove_children()
        self._run(seq, screen, self._control)

    def cancel(self) -> bool:
        if self._control is None or not self.running:
            return False
        self._control.cancel()
        self.query_one("#screen-title", Label).update("screen: cancelling…")
        return True

    @property
    def running_levers(self) -> set[str]:
        return set(self.screen_run.screened.ids) if self.screen_run is not None else set()

    async def wait(self) -> None:
        """Until the worker has returned from the screen (its launches' process groups are gone by then)."""
        while not self._idle.is_set():
            await asyncio.sleep(0.05)

    def stop(self, timeout: float) -> bool:
        """Cancel and block until the screen has ended (the app closing under it)."""
        if self._control is not None:
            self._control.cancel()
        return self._idle.wait(timeout)

    def show_store(self, seq) -> None:
        """Idle: the newest screen the store holds, its effects, calls and plots."""
        if self.running:
            return
        with seq.held.lock:
            # the run index keeps a screen by its id: every kept one has it
            found = max(seq.machine.runs.screens, key=lambda r: r.id or 0, default=None)
        record = terminal_safe(found.run) if found is not None else None
        key = _key(record) if record is not None else None
        if record is not None and key != self._shown:
            self._shown = key
            self._show_record(record, _stored_samples(record))

    def on_mount(self) -> None:
        self.show_store(self._seq())

    # -- the worker thread -------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="screen", exit_on_error=False)
    def _run(self, seq, screen, control) -> None:
        from optseq.state.api import run_screen

        try:
            report = run_screen(seq.run_host, screen, on_event=self._on_event, control=control)
        except Exception as exc:  # a refusal at its start, a store that cannot be written: one line
            self.post_message(self.Ended(None, str(exc) or type(exc).__name__))
        else:
            self.post_message(self.Ended(report))
        finally:
            self._idle.set()

    def _on_event(self, event: dict) -> None:
        found = screened.samples([event])
        if not found or found[0].event != "sample":
            return
        sample = found[0]
        with self._lock:
            self._samples.append(sample)
            self._current = (sample.block or 0, sample.index if sample.index is not None else -1)
        self.post_message(self.Moved())

    # -- on the UI thread --------------------------------------------------------------------
    def on_screen_panel_moved(self, message: Moved) -> None:
        message.stop()
        self._where()

    def _where(self) -> None:
        screen = self.screen_run
        if screen is None:
            return
        with self._lock:
            measured, current = len(self._samples), self._current
            blocks = {s.block for s in self._samples}
        runs = screen.design.block_runs  # a folded design's block launches one half of its runs
        done = sum(1 for b in blocks if sum(1 for s in self._samples if s.block == b) >= runs)
        text = f"blocks done: {done} of up to {screen.max_blocks} · {measured} of {screen.max_blocks * runs} launches"
        if done < screen.max_blocks:  # the screen goes on until it ends: the next block is the one under way
            text += f" · block {done + 1} under way"
        if current is not None:
            block, index = current
            levels = screen.design.runs[index] if 0 <= index < len(screen.design.runs) else ()
            setting = ", ".join(f"{lever} {'on' if level > 0 else 'off'}"
                                for lever, level in zip(screen.screened.ids, levels))
            text += f" · last: block {block} run {index} ({setting})"
        self.query_one("#screen-where", Static).update(text)
        self.query_one("#screen-progress", ProgressBar).update(progress=measured)

    def on_screen_panel_ended(self, message: Ended) -> None:
        # not stopped: the main screen refreshes the table and notifies how it ended
        self.screen_run, samples = None, list(self._samples)
        self.remove_class("-running")
        report = message.report
        if report is None:
            self.query_one("#screen-title", Label).update(f"screen: could not run: {message.error}")
            return
        seq = self._seq()
        with seq.held.lock:
            found = next((r for r in seq.machine.runs.screens if r.id == report.run_id), None)
        if found is not None:
            record = terminal_safe(found.run)
            self._shown = _key(record)
            self._show_record(record, samples)

    def _show_record(self, record: screened.ScreenRun, samples: list[screened.Sample]) -> None:
        view = screened.summary(record)
        first, *rest = screened.summary_lines(view)
        self.query_one("#screen-title", Label).update(first)
        self.query_one("#screen-where", Static).update(f"blocks done: {view['blocks']} · {screened.launches_text(view)}")
        width = max((len(lever) for lever in view["calls"]), default=0)
        self.query_one("#screen-effects", Static).update("\n".join(
            f"{lever.ljust(width)}  {(c['outcome'] or 'undecided').ljust(12)}  {c['figure'] or '-'}  {c['reason'] or ''}"
            .rstrip() for lever, c in view["calls"].items()))
        self.query_one("#screen-said", Static).update("\n".join(line.strip() for line in rest[1:]))
        plots = self.query_one("#screen-plots", Vertical)
        plots.remove_children()
        screen = record.screen
        named = [e for e in (screen.step.interactions if screen.step is not None else ()) if len(e.levers) == 2]
        for effect in named:
            a, b = effect.levers
            plot = InteractionPlot(a, b, classes="screen-plot")
            plots.mount(plot)
            plot.show(screened.corners(screen.design or screened.Design(), samples, a, b),
                      f"{screened.pair_name(effect)}: {screened.figure(effect)}")


def _key(record: screened.ScreenRun) -> tuple:
    """What a redraw of an idle screen depends on: its run, its status and its blocks done."""
    return record.id, record.status, len(record.screen.blocks)


def _stored_samples(record: screened.ScreenRun) -> list[screened.Sample]:
    """A finished screen's samples from its samples file (JSON lines), for its plots; [] where it is gone."""
    import json

    if record.samples_file is None:
        return []
    events = []
    try:
        with open(record.samples_file, encoding="utf-8") as lines:
            for line in lines:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        return []
    return [s for s in screened.samples(events) if s.arm.startswith("run-")]
