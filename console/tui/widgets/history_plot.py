"""A lever's estimates over its runs, with the 95% CI as bars, the rule's threshold as a labelled line, and its
change points as vertical lines, each named in a line under the plot with the commits around it.

Plotext (through textual-plotext's `Plot`) is imported when a plot is first drawn, not when the console
starts: the History tab and the wide screen's side pane are not on the first screen at 80 columns, and a
lever without runs shows a line of text. The change points are found in a thread once the plot is first
drawn (the detector imports ruptures and scipy, a second or so the first time), and drawn when they come.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual.app import RenderResult
from textual.widget import Widget

from optseq.state.api import history_points as points
from optseq.state.api import ratio_text

if TYPE_CHECKING:
    from textual_plotext.plot import Plot

Y_TICKS = 5
"""About how many y labels: enough to read a ratio off, few enough for the 10 rows of an 80x24 pane."""


def nice_ticks(low: float, high: float, count: int = Y_TICKS) -> list[float]:
    """Evenly spaced round values (steps of 1, 2 or 5 × 10^k) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        high = low + 1.0
    raw = (high - low) / max(count - 1, 1)
    scale = 10 ** math.floor(math.log10(raw))
    step = next(m * scale for m in (1, 2, 5, 10) if m * scale >= raw)
    # whole multiples of the step, counted as integers: adding up floats drifts (1.2 / 0.1 floors to 11)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def tick_text(value: float, ticks: list[float]) -> str:
    """All labels with the same decimals, so the axis reads as one scale (1.0, 1.5, 2.0 - never 1, 1.5, 2)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}×"


class HistoryPlot(Widget):
    """Redrawn whenever the selected lever or its runs change; `points` holds what is plotted.

    What textual_plotext's PlotextPlot does (its size, the app's theme as the plot's colours) is done
    here in `render`, so that the figure, and plotext with it, exists only once a plot is shown.
    """

    DEFAULT_CSS = """
    HistoryPlot {
        width: 1fr;
        height: 1fr;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[tuple[int, float, float | None, float | None]] = []
        """(run id, estimate, CI low, CI high) per run with statistics, oldest first."""
        self.lever: str | None = None
        self.message = ""
        """What is shown instead of a plot when there is nothing to plot; empty when there is a plot."""
        self.y_range: tuple[float, float] | None = None
        """The y axis as drawn: every CI bar is clipped inside it, so none draws on the frame."""
        self._plot: Plot | None = None
        self._figure: tuple | None = None
        """What the next render draws: (title, threshold, ticks, their labels, bottom, top); None once drawn."""
        self._spec: tuple | None = None
        """The figure of the lever shown, kept to draw it again when its change points come."""
        self.changes: list | None = None
        """The change points of the runs shown (lever_changes.Change), oldest first; None until they are found."""
        self.captions: list[str] = []
        """One line per change point, under the plot."""
        self.settled = False
        """Whether the change points of the runs shown are in (`changes` is [] while they are being found)."""
        self._runs: list[dict] = []
        self._shown = 0
        """Counts the shows of other runs: change points found for an earlier one are dropped."""
        self._key: tuple | None = None
        """The lever and runs shown, as far as their change points go."""

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    @property
    def plt(self) -> Plot:
        """textual_plotext's Plot (a plotext figure), made on first use."""
        if self._plot is None:
            from textual_plotext.plot import Plot

            self._plot = Plot()
        return self._plot

    def show(self, lever, runs: list[dict]) -> None:
        self.lever = lever.id
        self.points = points(runs)  # the export's charts draw the same points (state.history_points)
        self.y_range = None
        self._figure = self._spec = None
        key = (lever.id, tuple((r.get("id"), str(r.get("summary"))) for r in runs))
        if key != self._key:  # a refresh with the same runs keeps its change points: no frame without them
            self._runs, self.changes, self.captions, self.settled = list(runs), None, [], False
            self._key = key
            self._shown += 1
        if not self.points:
            if not lever.run:  # a decision lever (or a hand-decided one) never has runs to plot
                self.message = f"{lever.id}: nothing to measure (decided by criteria or by hand)"
            else:
                self.message = f"{lever.id}: no run yet" if not runs else f"{lever.id}: no run with an estimate yet"
            self.refresh()
            return
        self.message = ""
        threshold = lever.rule.min_speedup if lever.rule is not None and not lever.rule.choose else None
        values = [v for p in self.points for v in p[1:] if isinstance(v, (int, float))]
        if threshold is not None:
            values.append(threshold)
        ticks = nice_ticks(min(values), max(values))
        # a margin of half a step above and below: the frame is the range's edge, the data stays inside it
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        bottom, top = ticks[0] - step / 2, ticks[-1] + step / 2
        self.y_range = (bottom, top)
        labels = [tick_text(t, ticks) for t in ticks]
        if threshold is not None:
            # the threshold labels its own row, and no round value near it does: on an axis of 50s a 1.3× line
            # sat on the row labelled 0×
            kept = [(t, label) for t, label in zip(ticks, labels) if abs(t - threshold) > step / 2]
            ticks, labels = map(list, zip(*sorted(kept + [(threshold, f"{threshold:g}×")])))
        self._figure = self._spec = (f"{lever.id}: estimate × per run (95% CI)", threshold, ticks, labels, bottom,
                                     top)
        self.refresh()

    def _find_changes(self) -> None:
        """Start finding the shown runs' change points, off the UI thread; `_found` takes them."""
        from optseq.state.api import MIN_RUNS, changes

        shown, runs = self._shown, self._runs
        if len(self.points) < MIN_RUNS:
            self.changes, self.settled = [], True
            return
        self.changes = []  # asked: the plot is drawn without them until they come
        self.run_worker(lambda: self.app.call_from_thread(self._found, shown, changes(runs)), thread=True,
                        group="change-points", exit_on_error=False)

    def _found(self, shown: int, found: list) -> None:
        if shown != self._shown or self._spec is None:
            return  # another lever (or new runs) since they were asked for
        from optseq.state.api import change_text

        ids = {p[0] for p in self.points}
        self.changes = [c for c in found if c.run in ids and c.previous in ids]
        self.captions = [change_text(c, brief=True) for c in self.changes]
        self.settled = True
        self._figure = self._spec
        self.refresh()

    def _draw(self) -> None:
        if self._figure is None:
            return
        title, threshold, ticks, labels, bottom, top = self._figure
        self._figure = None
        plt = self.plt
        plt.clear_figure()
        xs: list[float] = list(range(1, len(self.points) + 1))  # plotext takes positions as floats
        for x, (_, _, low, high) in zip(xs, self.points):
            if isinstance(low, (int, float)) and isinstance(high, (int, float)):
                # the CI as a bar (plotext's error() is symmetric), kept off the frame
                plt.plot([x, x], [max(low, bottom), min(high, top)], color="gray")
        plt.plot(xs, [p[1] for p in self.points], marker="dot", label="estimate")
        at = {p[0]: x for x, p in zip(xs, self.points)}
        for change in self.changes or ():
            between = at[change.run] - 0.5  # between the last run at the old level and the first at the new
            plt.vline(between, color="orange")
            plt.text(f"{ratio_text(change.before)}→{ratio_text(change.after)}×", x=between, y=top - (top - bottom) / 20,
                     alignment="center", color="orange")
        if threshold is not None:
            plt.hline(threshold, color="red")
            plt.text(f"min {threshold:g}×", x=xs[0], y=threshold, alignment="left")
        plt.ylim(bottom, top)
        plt.yticks(ticks, labels)
        plt.xlim(0.5, len(xs) + 0.5)
        plt.xticks(xs, [f"#{p[0]}" for p in self.points])
        plt.title(title)

    def render(self) -> RenderResult:
        if self.message:  # a plain line, not an empty frame with axes and nothing in it
            return Text(self.message, style="dim")
        if self.changes is None:
            self._find_changes()
        if self._figure is not None:
            self._draw()
        plot = self.plt
        width, height = self.size
        captions = self.captions[:max(height // 4, 1)]  # the plot keeps most of the pane
        height = max(height - len(captions), 1)
        # as PlotextPlot.render: both calls, or plotext does not take a new size (textual-plotext issue 5)
        plot.plotsize(width, height)
        plot._set_size(width, height)
        plot.theme(_theme(self.app))
        drawn = Text.from_ansi(plot.build())
        if not captions:
            return drawn
        return Group(drawn, *(Text(line, style="orange1", no_wrap=True, overflow="ellipsis") for line in captions))


def _theme(app) -> str:
    """The plotext theme in the app's colours (registered once per app theme, as PlotextPlot's "auto" does)."""
    from plotext._dict import themes
    from textual.color import Color
    from textual_plotext.plot import _rgbify_theme, _sequence

    name = f"textual-auto-{app.theme}"
    if name not in themes:
        variables = app.theme_variables
        surface = Color.parse(variables.get("surface")).rgb
        sequence: list[str | int | tuple[int, int, int]] = list(_sequence)  # the colours of a plot's lines
        themes[name] = _rgbify_theme(surface, surface, Color.parse(variables.get("foreground")).rgb,
                                     "default", sequence)
    return name
