"""The main screen's tab bar (Detail, Graph, Run, History, Screen) and its side pane (the graph and the history beside
the table from WIDE_FROM columns), mounted a frame after the first paint: the first frame shows the table, the status
line and the keys without styling, laying out and drawing the tab bar's widgets (18 of the 41 it held). The widgets
only these hold come in with this module, imported then."""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from textual.widget import Widget
from textual.widgets import ContentSwitcher, TabbedContent, TabPane

from optseq.console.tui.widgets.dep_graph import DependencyGraph
from optseq.console.tui.widgets.history_plot import HistoryPlot
from optseq.console.tui.widgets.later import Later
from optseq.console.tui.widgets.lever_detail import LeverDetail
from optseq.console.tui.widgets.run_panel import RunPanel

TOAST_WIDTH = 60
"""Textual's Toast width (at most half the screen); with its padding, what a notification's lines wrap at."""

ViewWidget = TypeVar("ViewWidget", bound=Widget)
"""A kind of view (the graph, the history plot), of which the tab and the side pane each show one."""


class Tabs:
    """The views under and beside the table, once mounted (`open`): what the screen draws the selected lever in."""

    def __init__(self, screen: Widget, detail: LeverDetail, views: TabbedContent) -> None:
        self._screen = screen
        self.detail = detail
        self.views = views

    @classmethod
    async def open(cls, column: Widget, side: Widget, panel: RunPanel, make_screen_panel: Callable[[], Widget]) -> Tabs:
        """Mount the tab bar under the status line (last in `column`) and the side pane's views in `side`; they are
        in the DOM, whole, when this returns."""
        detail = LeverDetail(id="detail-view")
        views = TabbedContent(id="views")
        # what `with TabPane(...)` inside `with TabbedContent(...)` does in a compose: the panes become its content.
        # The views behind a tab are built a frame later still (Later); the refresh_view after this fills them
        for pane in (TabPane("Detail", detail, id="detail"),
                     TabPane("Graph", Later(partial(DependencyGraph, id="graph-view")), id="graph"),
                     TabPane("Run", panel, id="run"),
                     TabPane("History", Later(partial(HistoryPlot, id="history-view")), id="history"),
                     TabPane("Screen", Later(make_screen_panel), id="screen")):
            views.compose_add_child(pane)
        await column.mount(views)
        await side.mount_all([Later(partial(DependencyGraph, id="side-graph")),
                              Later(partial(HistoryPlot, id="side-history"))])
        return cls(column.screen, detail, views)

    def graphs(self, wide: bool) -> list[DependencyGraph]:
        return self._views_of(DependencyGraph, "graph-view", "side-graph", wide)

    def plots(self, wide: bool) -> list[HistoryPlot]:
        return self._views_of(HistoryPlot, "history-view", "side-history", wide)

    def _views_of(self, kind: type[ViewWidget], tab: str, side: str, wide: bool) -> list[ViewWidget]:
        """The tab's view and, on a wide screen, the side pane's: those mounted (Later mounts them a frame after
        the tabs; the refresh_view that follows fills them)."""
        return [w for w in self._screen.query(kind) if w.id == tab or (wide and w.id == side)]

    def trim_toasts(self, newest: str | None) -> None:
        """The newest notifications that fit over the table: older ones go first, as a newer one clipped under
        them would say nothing at all; `newest` stays whatever its length."""
        app, room = self._screen.app, self._views_top()
        width = max(min(TOAST_WIDTH, self._screen.size.width // 2) - 2, 10)  # Toast's width and padding, app.tcss's
        for notification in reversed(list(app._notifications)):
            rows = sum(max(1, -(-len(line) // width)) for line in notification.message.splitlines() or [""]) + 1
            room -= rows
            if room < 0 and notification.message is not newest:
                app._unnotify(notification, refresh=False)
        app._refresh_notifications()

    def fit_toasts(self) -> None:
        """Notifications stand over the table (app.tcss docks them at the top), never lower than the views' tabs:
        below, they hid the detail the notification was about. The newest shows; older ones scroll off the top."""
        top = self._views_top()
        for rack in self._screen.query("#textual-toastrack"):
            rack.styles.max_height = max(top, 3)

    def settle_toasts(self) -> None:
        """What was said before the tabs were there (a read-only store, a run re-attached), fitted over the table
        once they are laid out."""
        said = list(self._screen.app._notifications)
        if said:
            self.trim_toasts(said[-1].message)
        self.fit_toasts()

    def _views_top(self) -> int:
        """The row the views' content starts on (under their tabs)."""
        return self.views.query_one(ContentSwitcher).region.y
