"""The main screen: lever table, status line, and the detail / graph / run / history views of the selected lever."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from textual import events
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane

# The dialogs, the help and the export preview are imported where they first open (with the Markdown
# widget, the export's renderer and the forms' validation): the first screen paints without them.
# tests/console/test_import_set.py holds what the first screen may import.
from optseq.console.tui.screens.asking import Asking
from optseq.console.tui.screens.following import Following
from optseq.console.tui.screens.screening import Screening
from optseq.console.tui.screens.syncing import Syncing
from optseq.console.tui.widgets.dep_graph import DependencyGraph
from optseq.console.tui.widgets.history_plot import HistoryPlot
from optseq.console.tui.widgets.key_footer import FULL_FROM as FULL_FOOTER_FROM, KeyFooter, footer_bindings, give_footer
from optseq.console.tui.widgets.later import Later
from optseq.console.tui.widgets.lever_detail import LeverDetail
from optseq.console.tui.widgets.lever_table import LeverTable
from optseq.console.tui.widgets.next_step import lever_steps, todo_hint
from optseq.console.tui.widgets.run_panel import RunPanel
from optseq.console.tui.widgets.status_line import StatusLine
from optseq.state.api import InputError
from optseq.state.api import terminal_safe

WRITES = {"run_selected", "run_next", "run_ready_parallel", "watch", "cancel_run", "record_criterion", "mark_plan",
          "set_fact", "decide", "sync", "screen"}
"""Actions that write to the store: disabled while another optseq holds it."""
VIEWS = ("detail", "graph", "run", "history", "screen")

ACTIONS = [
    Binding("r", "run_selected", "Run", tooltip="run the selected lever"),
    Binding("n", "run_next", "Run next", tooltip="run the lever `next` recommends"),
    Binding("R", "run_ready_parallel", "Run ready ∥",
            tooltip="measure the ready levers several at once (optseq --parallel N sets how many; on a cluster, "
                    "one per node), each decided as it lands"),
    Binding("w", "watch", "Watch", tooltip="re-check every adopted gain on the current code and stack (one lever "
                                            "at a time here; on a cluster, --parallel at once): holds or eroded"),
    Binding("s", "screen", "Screen", tooltip="decide the ready levers that compose together by a two-level design "
                                             "(optseq --run screen): effects, calls, interactions"),
    Binding("x", "cancel_run", "Cancel run", tooltip="stop the running lever (its whole process group); during R, "
                                                     "the selected lever's run alone"),
    Binding("c", "record_criterion", "Criterion", tooltip="record a criterion result of a decision lever"),
    Binding("p", "mark_plan", "Plan written", tooltip="mark the selected lever's plan as written"),
    Binding("f", "set_fact", "Fact", tooltip="set a fact that gates read"),
    Binding("d", "decide", "Decide", tooltip="decide the selected lever by hand (rationale required)"),
    Binding("e", "export", "Export", tooltip="write the plan as markdown and preview it"),
    Binding("S", "sync", "Sync", tooltip="optseq sync with the remote this store last synced with (else origin): "
                                         "push this store's new records, merge every other writer's"),
    Binding("question_mark,f1", "help", "Help", tooltip="keys and what they do"),
    Binding("q", "app.quit", "Quit", tooltip="quit (asks first while a lever runs)"),
]
"""Every action on a key; the command palette and the help screen are built from this list."""


SCROLL = Binding.Group("Scroll detail", compact=True)
DETAIL_KEYS = [
    Binding("shift+down", "detail_down", "Detail down", group=SCROLL, key_display="⇧↓"),
    Binding("shift+up", "detail_up", "Detail up", group=SCROLL, key_display="⇧↑"),
    Binding("shift+pagedown", "detail_page(1)", "Detail page down", show=False),
    Binding("shift+pageup", "detail_page(-1)", "Detail page up", show=False),
]
"""The detail pane scrolled from the table, the focus left where the arrows still move the lever (the help says
so; the footer names them where it has room)."""

IDLE_X = Binding("x", "nothing_running", show=False)
"""x while nothing runs: Textual tries a key's next binding when the first one's action is off, so the palette and
the footer still offer no cancel, and the key still answers."""


TOAST_WIDTH = 60
"""Textual's Toast width (at most half the screen); with its padding, what a notification's lines wrap at."""


WIDE_FROM = 160
"""Screen width from which the graph and the history stand beside the table and the detail."""


class MainScreen(Following, Asking, Syncing, Screening, Screen):
    """Everything about the plan on one screen; the table's cursor row is the lever actions apply to."""

    BINDINGS = ACTIONS + DETAIL_KEYS + [IDLE_X] + [Binding(str(i + 1), f"view('{v}')", v.title(), show=False) for i, v in enumerate(VIEWS)]

    def __init__(self, seq, export_dir: Path | None, parallel: int = 2) -> None:
        super().__init__()
        self.seq = seq
        self.export_dir = export_dir
        self.parallel = parallel
        self.holder = (f"{seq.store.directory} cannot be written from here" if seq.readonly else None)
        """Why this console cannot write (an unwritable store directory); None when it writes."""
        self.panel = RunPanel(id="run-view")
        """The run panel, kept by reference: the app stops its run even after the screen is gone."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_FROM, "-wide")]

    def compose(self):
        # the breakpoint class as the first resize will set it, before the children are styled: that resize then
        # changes no class, and the whole screen is not styled twice before its first frame
        wide = self.app.size.width >= WIDE_FROM
        self.update_classes({"-wide": wide, "-narrow": not wide})
        with Horizontal(id="body"):
            with Vertical(id="main-column"):
                yield LeverTable(id="levers")
                yield StatusLine(id="status")
                with TabbedContent(id="views"):
                    with TabPane("Detail", id="detail"):
                        yield LeverDetail(id="detail-view")
                    # the views behind a tab (and the side pane, shown from WIDE_FROM) are mounted a frame after
                    # the first paint (Later); refresh_view fills them then (and skips them until they are there)
                    with TabPane("Graph", id="graph"):
                        yield Later(partial(DependencyGraph, id="graph-view"))
                    with TabPane("Run", id="run"):
                        yield self.panel  # not lazy: a key pressed before the next frame may start a run
                    with TabPane("History", id="history"):
                        yield Later(partial(HistoryPlot, id="history-view"))
                    with TabPane("Screen", id="screen"):
                        yield Later(self.make_screen_panel)
            # a wide terminal shows the graph and the history beside the table, not only behind their tabs: in
            # its first frame when it starts wide, a frame later (if ever shown) when it starts narrow
            side = (lambda make: make()) if wide else Later
            with Vertical(id="side"):
                yield side(partial(DependencyGraph, id="side-graph"))
                yield side(partial(HistoryPlot, id="side-history"))
        yield KeyFooter(compact=True)

    @property
    def wide(self) -> bool:
        return self.has_class("-wide")

    @property
    def active_bindings(self):
        return footer_bindings(super().active_bindings, self.size.width, self.panel.running or self.screen_running)

    def on_resize(self, event) -> None:
        # crossing a breakpoint changes what the footer and the side pane show
        layout = (self.wide, event.size.width >= FULL_FOOTER_FROM)
        if layout != getattr(self, "_layout_seen", None):
            self._layout_seen = layout
            if hasattr(self, "_views"):
                self.refresh_view()
            self.refresh_bindings()
        self.call_after_refresh(self._fit_toasts)

    _resumed = False

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        # Textual resumes its default screen by styling the whole tree again; the first time, every node was
        # styled as it was registered a moment before and each class change since restyled its own: that pass
        # (a fifth of the work before the first frame) is skipped once. Later resumes (a dialog closed) keep it.
        if not self._resumed and event.refresh_styles:
            self._resumed = True
            event.prevent_default()
            super()._on_screen_resume(events.ScreenResume(refresh_styles=False))

    def on_mount(self) -> None:
        getattr(self.app, "keep_css", lambda: None)()  # the first screen's parsed stylesheets (console/tui/css_cache.py)
        self.set_class(self.seq.readonly, "-readonly")
        if self.holder:
            self.notify(f"read-only: {self.holder}; actions that write are off", severity="warning", timeout=10)
        # the first screen paints before the hours-saved calculus runs; the column fills just after
        self.refresh_view(hours=False)
        self.call_after_refresh(self.refresh_view)
        self.query_one(LeverTable).focus()
        self.app.screen_change_signal.subscribe(self, lambda screen: screen.call_after_refresh(give_footer, screen))
        self._reattach()
        self.start_following()

    # -- what is on screen ---------------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        return self.query_one(LeverTable).selected

    def refresh_view(self, hours: bool = True) -> None:
        # what the store holds came from levers and users (an evidence, a why): none of it drives the terminal
        status = terminal_safe(self.seq.status(hours=hours))
        _with_conflicts(status, self.seq)
        runs = terminal_safe(self.seq.latest_runs())
        priors = {l.id: (l.prior.estimate if l.prior else None) for l in self.seq.plan.levers}
        screening = self.screen_panel()
        running = self.panel.running_levers | (screening.running_levers if screening is not None else set())
        table = self.query_one(LeverTable)
        with self.seq.lock:
            steps = lever_steps(self.seq.plan, self.seq.machine, status["levers"], running)
            compares = list(self.seq.machine.runs.compares)
            testbeds = len(self.seq.machine.runs.testbeds) > 1
        table.show(status["levers"], runs, priors, running, steps)
        self.query_one(StatusLine).show(status, running, self.holder)
        for graph in self._views_of(DependencyGraph, "#graph-view", "#side-graph"):
            graph.show(self.seq.plan, status["levers"], running, runs)
        self.panel.show_store(runs, self.seq.readonly, compares, testbeds)
        if self.screen_panel() is not None:
            self.screen_panel().show_store(self.seq)
        self._views = {v["id"]: v for v in status["levers"]}
        self._steps = steps
        self.call_after_refresh(self._fit_toasts)
        self.show_lever(table.selected)
        self.refresh_bindings()

    def notify(self, message: str, **kwargs) -> None:
        """The newest notifications that fit over the table: older ones go first, as a newer one clipped under
        them would say nothing at all."""
        super().notify(message, **kwargs)
        from textual.widgets import ContentSwitcher

        room = self.query_one("#views").query_one(ContentSwitcher).region.y
        width = max(min(TOAST_WIDTH, self.size.width // 2) - 2, 10)  # Toast's width and padding, app.tcss's
        for notification in reversed(list(self.app._notifications)):
            rows = sum(max(1, -(-len(line) // width)) for line in notification.message.splitlines() or [""]) + 1
            room -= rows
            if room < 0 and notification.message is not message:
                self.app._unnotify(notification, refresh=False)
        self.app._refresh_notifications()

    def _fit_toasts(self) -> None:
        """Notifications stand over the table (app.tcss docks them at the top), never lower than the views' tabs:
        below, they hid the detail the notification was about. The newest shows; older ones scroll off the top."""
        from textual.widgets import ContentSwitcher

        top = self.query_one("#views").query_one(ContentSwitcher).region.y
        for rack in self.query("#textual-toastrack"):
            rack.styles.max_height = max(top, 3)

    def show_lever(self, lever_id: str | None) -> None:
        if lever_id is None or lever_id not in getattr(self, "_views", {}):
            return
        history = terminal_safe(self.seq.lever_history(lever_id))
        lever = self.seq.plan.lever(lever_id)
        self.query_one(LeverDetail).show(self._views[lever_id], history, lever, self._steps.get(lever_id, ""))
        for plot in self._views_of(HistoryPlot, "#history-view", "#side-history"):
            plot.show(lever, history["runs"])

    def _views_of(self, kind, tab: str, side: str) -> list:
        """The tab's view and, on a wide screen, the side pane's: those mounted (Later mounts them a frame after
        the first paint; the refresh_view that follows fills them)."""
        return [w for w in self.query(kind) if f"#{w.id}" == tab or (self.wide and f"#{w.id}" == side)]

    def choose_lever(self, lever_id: str) -> None:
        """Make `lever_id` the selected row (the palette's `Lever …` commands)."""
        table = self.query_one(LeverTable)
        table.select(lever_id)
        table.focus()

    def on_lever_table_highlighted(self, message: LeverTable.Highlighted) -> None:
        self.show_lever(message.lever)

    def on_dependency_graph_chosen(self, message: DependencyGraph.Chosen) -> None:
        self.query_one(LeverTable).select(message.lever)
        self.action_view("detail")

    def on_run_panel_started(self, message: RunPanel.Started) -> None:
        self.refresh_view()

    def on_run_panel_landed(self, message: RunPanel.Landed) -> None:
        """One run of a parallel group ended; the group goes on."""
        self._tell(message.lever, message.report, message.error)
        self.refresh_view()

    def on_run_panel_finished(self, message: RunPanel.Finished) -> None:
        if hasattr(message.report, "reports"):  # a parallel group: each run was told as it landed
            self.notify(f"{message.lever}: {message.report.message}", timeout=8)
        else:
            self._tell(message.lever, message.report, message.error)
        self.refresh_view()
        self._reattach()

    def _tell(self, lever_id: str, report, error: str | None) -> None:
        if report is None:
            self.notify(f"{lever_id}: {error}", severity="error", timeout=8)
            return
        failed = report.status not in ("succeeded", "inconclusive")
        self.notify(f"run #{report.run_id} {report.status}: {report.message}",
                    severity="error" if failed else "information", timeout=8)

    # -- actions ------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in WRITES and self.seq.readonly:
            return None  # shown, greyed out: this console cannot write the store
        if action == "cancel_run" and not self.panel.running and not self.screen_running:
            return None  # x falls through to IDLE_X
        return True

    def action_detail_down(self) -> None:
        self.query_one(LeverDetail).scroll_relative(y=1, animate=False)

    def action_detail_up(self) -> None:
        self.query_one(LeverDetail).scroll_relative(y=-1, animate=False)

    def action_detail_page(self, pages: int) -> None:
        detail = self.query_one(LeverDetail)
        detail.scroll_relative(y=pages * max(detail.scrollable_content_region.height - 1, 1), animate=False)

    def action_view(self, view: str) -> None:
        self.query_one(TabbedContent).active = view

    def action_run_selected(self) -> None:
        if self.selected:
            self._start(self.selected)

    def action_run_next(self) -> None:
        status = self.seq.status()
        lever_id = status["next"]
        if lever_id is None:
            todo = status.get("todo") or []
            self.notify("nothing is ready to run" + (f" · {todo_hint(todo[0])}" if todo else ""),
                        severity="warning")
            return
        self.query_one(LeverTable).select(lever_id)
        self._start(lever_id)

    def action_run_ready_parallel(self) -> None:
        if self.panel.running or self.screen_running:  # a screen's launches share the machine too
            self.notify(f"{self.panel.lever or 'a screen'} is running; cancel it first (x)", severity="warning")
            return
        if self.seq.status()["next"] is None and not any(
                v["state"] == "ready" for v in self.seq.status()["levers"]):
            self.notify("nothing is ready to run", severity="warning")
            return
        if self.seq.runner.name == "local":
            self.notify(f"up to {self.parallel} levers at once on this machine: their timings share its cores",
                        severity="warning")
        self.panel.start_group(self.seq, "ready", self.parallel)
        self.action_view("run")

    def action_watch(self) -> None:
        if self.panel.running or self.screen_running:  # a screen's launches share the machine too
            self.notify(f"{self.panel.lever or 'a screen'} is running; cancel it first (x)", severity="warning")
            return
        elsewhere = self.seq.watch_refusals()  # adopted on another testbed: said, not measured here
        if not self.seq.watchable():
            self.notify("; ".join(elsewhere) or "nothing to watch: no adopted lever has a command to measure it with",
                        severity="warning")
            return
        if elsewhere:
            self.notify("; ".join(elsewhere), severity="warning")
        # here the levers share this machine's cores, which a watch's figures must not: one at a time
        self.panel.start_group(self.seq, "watch", self.parallel if self.seq.runner.name != "local" else 1)
        self.action_view("run")

    def _start(self, lever_id: str) -> None:
        if self.panel.running or self.screen_running:  # a screen's launches share the machine too
            self.notify(f"{self.panel.lever or 'a screen'} is running; cancel it first (x)", severity="warning")
            return
        try:
            self.seq.check_runnable(lever_id)
        except InputError as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return
        self.panel.start(self.seq, lever_id)
        self.action_view("run")

    def action_cancel_run(self) -> None:
        # in a parallel group, the selected lever's run alone when it is one of them; else everything that runs
        if not self.panel.cancel(self.selected) and not self.cancel_screen():
            self.notify("nothing is running", severity="warning")

    def action_nothing_running(self) -> None:
        self.notify("nothing is running", severity="warning")

    def action_help(self) -> None:
        from optseq.console.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(ACTIONS))


def _with_conflicts(status: dict, seq) -> None:
    """Decisions two writers made concurrently (optseq sync): on the status line and in the lever's warnings."""
    from optseq.state.api import conflicts, conflict_lines as lines

    with seq.lock:
        found = terminal_safe(conflicts(seq.store))
    if not found:
        return
    status["conflicts"] = found
    views = {v["id"]: v for v in status["levers"]}
    for conflict, line in zip(found, lines(found)):
        view = views.get(conflict["lever"])
        if view is not None:
            view["warnings"] = [*(view.get("warnings") or []), line.removeprefix("conflict: ")]
