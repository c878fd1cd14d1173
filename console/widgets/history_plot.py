"""A lever's estimates over its runs, with the 95% CI as bars and the rule's threshold as a line."""
from __future__ import annotations

from textual_plotext import PlotextPlot

from optseq.state.history_points import points


class HistoryPlot(PlotextPlot):
    """Redrawn whenever the selected lever or its runs change; `points` holds what is plotted."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.points: list[tuple[int, float, float | None, float | None]] = []
        """(run id, estimate, CI low, CI high) per run with statistics, oldest first."""
        self.lever: str | None = None

    def show(self, lever, runs: list[dict]) -> None:
        self.lever = lever.id
        self.points = points(runs)  # the export's charts draw the same points (state.history_points)
        plt = self.plt
        plt.clear_figure()
        if not self.points:
            plt.title(f"{lever.id}: no run with an estimate yet")
        else:
            xs = list(range(1, len(self.points) + 1))
            for x, (_, _, low, high) in zip(xs, self.points):
                if isinstance(low, (int, float)) and isinstance(high, (int, float)):
                    plt.plot([x, x], [low, high], color="gray")  # the CI as a bar (plotext's error() is symmetric)
            plt.plot(xs, [p[1] for p in self.points], marker="dot")
            if lever.rule is not None and not lever.rule.choose:
                plt.hline(lever.rule.min_speedup)
            plt.xticks(xs, [f"#{p[0]}" for p in self.points])
            plt.title(f"{lever.id}: estimate × per run (95% CI)")
        self.refresh()
