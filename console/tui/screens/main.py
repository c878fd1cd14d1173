"""The main screen: lever table, status line, and the detail / graph / run / history views of the selected lever."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen

# The dialogs, the help and the export preview are imported where they first open (with the Markdown
# widget, the export's renderer and the forms' validation), the tab bar and its views a frame after the first
# paint (screens/tabs.py): the first screen paints without them.
# tests/console/test_import_set.py holds what the first screen may import.
from optseq.console.tui.screens.asking import Forms
from optseq.console.tui.screens.following import Follower
from optseq.console.tui.screens.keys import ACTIONS, DETAIL_KEYS, IDLE_X, VIEWS, WRITES
from optseq.console.tui.screens.launching import Launcher
from optseq.console.tui.screens.screening import Screening
from optseq.console.tui.screens.syncing import Syncer
from optseq.console.tui.widgets.key_footer import FULL_FROM as FULL_FOOTER_FROM, KeyFooter, footer_bindings, give_footer
from optseq.console.tui.widgets.lever_table import LeverTable
from optseq.console.tui.widgets.next_step import lever_steps
from optseq.console.tui.widgets.status_line import StatusLine
from optseq.state.api import terminal_safe

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from optseq.console.tui.screens.tabs import Tabs
    from optseq.console.tui.widgets.dep_graph import DependencyGraph
    from optseq.console.tui.widgets.run_panel import RunPanel
    from optseq.console.tui.widgets.screen_panel import ScreenPanel
    from optseq.state.api import KeptCompare, LeverStatus, Run, Sequencer, Status

WIDE_FROM = 160
"""Screen width from which the graph and the history stand beside the table and the detail."""


class MainScreen(Screen[None]):
    """Everything about the plan on one screen; the table's cursor row is the lever actions apply to.

    What the screen does besides showing the plan is held by one object per concern, each given the screen as a
    `ScreenHost` (screens/host.py): `follower` (other writers, the plan file, branch levers), `forms` (c p f d e),
    `syncer` (S), `screening` (s and the Screen tab) and `launcher` (r n R w x); the `action_*` methods Textual's
    bindings call hand the key to them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *ACTIONS, *DETAIL_KEYS, IDLE_X,
        *[Binding(str(i + 1), f"view('{v}')", v.title(), show=False) for i, v in enumerate(VIEWS)]]

    def __init__(self, seq: Sequencer, export_dir: Path | None, parallel: int = 2) -> None:
        super().__init__()
        self.seq = seq
        self.export_dir = export_dir
        self.parallel = parallel
        self.holder = (f"{seq.store.directory} cannot be written from here" if seq.readonly else None)
        """Why this console cannot write (an unwritable store directory); None when it writes."""
        self.made_panel: RunPanel | None = None
        """The run panel once made (`panel`), kept by reference: the app stops its run even after the screen is gone."""
        self.shown: dict[str, LeverStatus] = {}
        """The lever views on screen now, by id (refresh_view's); empty until the first refresh."""
        self._steps: dict[str, str] = {}
        self._store_view: tuple[list[Run], bool, list[KeptCompare], bool] | None = None
        self._filled = False
        """refresh_view has run: a resize before it has nothing to redraw."""
        self._layout_seen: tuple[bool, bool] | None = None
        self.tabs: Tabs | None = None
        """The tab bar and the side pane's views, once mounted (a frame after the first paint: open_tabs)."""
        self.tabs_opened = asyncio.Event()
        """Set once open_tabs is done, or the screen closed before: what a Pilot test's start waits for too."""
        self.follower = Follower(self)
        self.forms = Forms(self)
        self.syncer = Syncer(self)
        self.screening = Screening(self)
        self.launcher = Launcher(self, self.screening)

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_FROM, "-wide")]

    def compose(self) -> ComposeResult:
        # the breakpoint class as the first resize will set it, before the children are styled: that resize then
        # changes no class, and the whole screen is not styled twice before its first frame
        wide = self.app.size.width >= WIDE_FROM
        self.update_classes({"-wide": wide, "-narrow": not wide})
        # the table, the status line and the keys first; the tab bar (#views) and the side's views later: open_tabs
        with Horizontal(id="body"):
            with Vertical(id="main-column"):
                yield LeverTable(id="levers")
                yield StatusLine(id="status")
            yield Vertical(id="side")
        yield KeyFooter(compact=True)

    @property
    def panel(self) -> RunPanel:
        """The Run tab's panel, made at its first use: the tabs' mount, a frame after the first paint (its module
        and the widgets' it builds are not loaded before)."""
        if self.made_panel is None:
            from optseq.console.tui.widgets.run_panel import RunPanel

            self.made_panel = RunPanel(id="run-view")
            if self._store_view is not None:  # what the last refresh_view showed: its title says it from the start
                self.made_panel.show_store(*self._store_view)
        return self.made_panel

    @property
    def running(self) -> bool:
        """A run or a screen under way (none before the run panel is made)."""
        return self.made_panel is not None and self.launcher.running

    @property
    def wide(self) -> bool:
        return self.has_class("-wide")

    @property
    def table(self) -> LeverTable:
        return self.query_one(LeverTable)

    @property
    def status_line(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        return footer_bindings(super().active_bindings, self.size.width, self.running)

    def on_resize(self, event: events.Resize) -> None:
        # crossing a breakpoint changes what the footer and the side pane show
        layout = (self.wide, event.size.width >= FULL_FOOTER_FROM)
        if layout != self._layout_seen:
            self._layout_seen = layout
            if self._filled:
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
        self.call_after_refresh(self.open_tabs)
        self.table.focus()
        self.app.screen_change_signal.subscribe(self, lambda screen: screen.call_after_refresh(give_footer, screen))
        self.follower.start()

    async def open_tabs(self) -> None:
        """The tab bar and the side pane, a frame after the first paint; then the keys the app held until they
        were there (a `3`, an `r` typed ahead), a run to re-attach, and the hours-saved column."""
        try:
            if not self.is_attached:
                return  # a quit typed ahead of the first frame closed the screen first
            from optseq.console.tui.screens.tabs import Tabs

            self.tabs = await Tabs.open(self.query_one("#main-column"), self.query_one("#side"), self.panel,
                                        self.screening.make_panel)
            self.show_lever(self.table.selected)
            self.call_after_refresh(self.tabs.settle_toasts)  # said before the tabs, laid out with them
            self.launcher.reattach()
            # after the views Later mounts (queued as the tabs mounted): it fills them
            self.call_after_refresh(self.refresh_view)
        finally:
            self.tabs_opened.set()
            getattr(self.app, "release_keys", lambda: None)()

    def on_unmount(self) -> None:
        self.tabs_opened.set()  # nothing waits on tabs that will not come

    # -- what is on screen ---------------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        return self.table.selected

    def refresh_view(self, hours: bool = True) -> None:
        # the layout this draws for: the first resize, which comes with the same one, then redraws nothing (it
        # ran the whole status, hours included, before the first frame)
        self._layout_seen = (self.wide, self.app.size.width >= FULL_FOOTER_FROM)
        # what the store holds came from levers and users (an evidence, a why): none of it drives the terminal
        status = _with_conflicts(terminal_safe(self.seq.views.status(hours=hours)), self.seq)
        runs = terminal_safe(self.seq.views.latest_runs())
        priors = {l.id: (l.prior.estimate if l.prior else None) for l in self.seq.plan.levers}
        screening = self.screen_panel()
        panel = self.made_panel  # none before the tabs: open_tabs makes it, and the refresh_view after shows it
        running = ((panel.running_levers if panel is not None else set())
                   | (screening.running_levers if screening is not None else set()))
        table = self.table
        with self.seq.held.lock:
            steps = lever_steps(self.seq.plan, self.seq.machine, status.levers, running)
            compares = list(self.seq.machine.runs.compares)
            testbeds = len(self.seq.machine.runs.testbeds) > 1
        table.show(status.levers, runs, priors, running, steps)
        self.status_line.show(status, running, self.holder)
        for graph in self.tabs.graphs(self.wide) if self.tabs is not None else ():
            graph.show(self.seq.plan, status.levers, running, runs)
        self._store_view = (runs, self.seq.readonly, compares, testbeds)
        if panel is not None:
            panel.show_store(*self._store_view)
        if screening is not None:
            screening.show_store(self.seq)
        self.shown = {v.id: v for v in status.levers}
        self._steps = steps
        self._filled = True
        self.call_after_refresh(self._fit_toasts)
        self.show_lever(table.selected)
        self.refresh_bindings()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """The newest notifications that fit over the table (Tabs.trim_toasts; all of them before the tabs, which
        trim them as they come)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)
        if self.tabs is not None:
            self.tabs.trim_toasts(message)

    def _fit_toasts(self) -> None:
        if self.tabs is not None:  # before them, open_tabs fits the toasts once they are there
            self.tabs.fit_toasts()

    def show_lever(self, lever_id: str | None) -> None:
        tabs = self.tabs
        if tabs is None or lever_id is None or lever_id not in self.shown:
            return  # before the tabs: open_tabs shows the selected lever once they are there
        history = terminal_safe(self.seq.views.lever_history(lever_id))
        lever = self.seq.plan.lever(lever_id)
        tabs.detail.show(self.shown[lever_id], history, lever, self._steps.get(lever_id, ""))
        for plot in tabs.plots(self.wide):
            # the plot reads runs as `optseq runs` hands them over (history_points, lever_changes): as stored
            plot.show(lever, [run.stored for run in history["runs"]])

    def choose_lever(self, lever_id: str) -> None:
        """Make `lever_id` the selected row (the palette's `Lever …` commands)."""
        table = self.table
        table.select(lever_id)
        table.focus()

    def plan_banner(self, error: str | None) -> None:
        """Show the plan file's error above everything (None: hide it); made at the first error, never before."""
        banners = self.query("#plan-banner")
        if error is None:
            if banners:
                banners.first().set_class(False, "-shown")
            return
        from optseq.console.tui.widgets.plan_banner import PlanBanner

        if banners:
            banner = banners.first(PlanBanner)
        else:
            banner = PlanBanner(id="plan-banner")
            self.mount(banner, before=0)
        banner.show_error(error)

    def on_lever_table_highlighted(self, message: LeverTable.Highlighted) -> None:
        self.show_lever(message.lever)

    def on_dependency_graph_chosen(self, message: DependencyGraph.Chosen) -> None:
        self.table.select(message.lever)
        self.action_view("detail")

    def on_run_panel_started(self, message: RunPanel.Started) -> None:
        self.refresh_view()

    def on_run_panel_landed(self, message: RunPanel.Landed) -> None:
        """One run of a parallel group ended; the group goes on."""
        self.launcher.tell(message.lever, message.report, message.error)
        self.refresh_view()

    def on_run_panel_finished(self, message: RunPanel.Finished) -> None:
        from optseq.console.tui.widgets.group_rows import GroupReport  # loaded with the panel that sent this

        if isinstance(message.report, GroupReport):  # a parallel group: each run was told as it landed
            self.notify(f"{message.lever}: {message.report.message}", timeout=8)
        else:
            self.launcher.tell(message.lever, message.report, message.error)
        self.refresh_view()
        self.launcher.reattach()

    def on_screen_panel_ended(self, message: ScreenPanel.Ended) -> None:
        self.screening.ended(message)

    # -- the concerns, as other code calls them --------------------------------------------------
    def start_following(self) -> None:
        self.follower.start()

    def follow_plan(self) -> bool:
        return self.follower.follow_plan()

    @property
    def syncing(self) -> bool:
        return self.syncer.syncing

    def make_screen_panel(self) -> ScreenPanel:
        return self.screening.make_panel()

    def screen_panel(self) -> ScreenPanel | None:
        return self.screening.panel()

    @property
    def screen_running(self) -> bool:
        return self.screening.running

    def cancel_screen(self) -> bool:
        return self.screening.cancel()

    # -- actions ------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in WRITES and self.seq.readonly:
            return None  # shown, greyed out: this console cannot write the store
        if action == "cancel_run" and not self.running:
            return None  # x falls through to IDLE_X
        return True

    # the keys reach these once the tabs are there: the app holds them until open_tabs is done
    def action_detail_down(self) -> None:
        self.query_one("#detail-view").scroll_relative(y=1, animate=False)

    def action_detail_up(self) -> None:
        self.query_one("#detail-view").scroll_relative(y=-1, animate=False)

    def action_detail_page(self, pages: int) -> None:
        detail = self.query_one("#detail-view")
        detail.scroll_relative(y=pages * max(detail.scrollable_content_region.height - 1, 1), animate=False)

    def action_view(self, view: str) -> None:
        from textual.widgets import TabbedContent  # loaded with the tabs (screens/tabs.py)

        self.query_one("#views", TabbedContent).active = view

    def action_run_selected(self) -> None:
        self.launcher.run_selected()

    def action_run_next(self) -> None:
        self.launcher.run_next()

    def action_run_ready_parallel(self) -> None:
        self.launcher.run_ready_parallel()

    def action_watch(self) -> None:
        self.launcher.watch()

    def action_cancel_run(self) -> None:
        self.launcher.cancel()

    def action_nothing_running(self) -> None:
        self.notify("nothing is running", severity="warning")

    def action_screen(self) -> None:
        self.screening.start()

    def action_sync(self) -> None:
        self.syncer.start()

    def action_record_criterion(self) -> None:
        self.forms.record_criterion()

    def action_mark_plan(self) -> None:
        self.forms.mark_plan()

    def action_set_fact(self) -> None:
        self.forms.set_fact()

    def action_decide(self) -> None:
        self.forms.decide()

    def action_export(self) -> None:
        self.forms.export()

    def action_help(self) -> None:
        from optseq.console.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(ACTIONS))


def _with_conflicts(status: Status, seq: Sequencer) -> Status:
    """Decisions two writers made concurrently (optseq sync): on the status line and in the lever's warnings."""
    from optseq.state.api import conflicts, conflict_lines as lines

    with seq.held.lock:
        found = terminal_safe(conflicts(seq.store))
    if not found:
        return status
    said: dict[str, list[str]] = {}
    for conflict, line in zip(found, lines(found)):
        said.setdefault(conflict["lever"], []).append(line.removeprefix("conflict: "))
    levers = [view.with_warnings(said[view.id]) if view.id in said else view for view in status.levers]
    return status.with_levers(levers).with_sync(found, None)
