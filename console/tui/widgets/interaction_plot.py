"""A 2×2 interaction plot: the metric's mean at the four corners of a pair of screened levers, as two lines drawn
in text, one per setting of the second lever, across the first lever off and on. Parallel lines: no interaction;
lines that part or cross: the first lever's gain depends on the second."""
from __future__ import annotations

from textual.widgets import Static

from optseq.state.api import ratio_text

HEIGHT = 7
"""Rows of the plot's area."""
SPAN = 22
"""Columns between the `off` and the `on` ends of each line."""


def plot_lines(a: str, b: str, means: dict[tuple[int, int], float], title: str = "") -> list[str]:
    """The plot as lines of text: `title`, the area (● b on, ○ b off; where both fall on one cell, ◉), an axis
    with a's two settings, and the four means."""
    values = list(means.values())
    low, high = min(values), max(values)

    def row(value: float) -> int:  # 0 = top
        return 0 if high == low else round((high - value) / (high - low) * (HEIGHT - 1))

    grid = [[" "] * (SPAN + 1) for _ in range(HEIGHT)]
    for level, mark in ((-1, "○"), (1, "●")):  # b off drawn first: b on is drawn over it where they meet
        start, end = row(means[(-1, level)]), row(means[(1, level)])
        for column in range(1, SPAN):
            y = round(start + (end - start) * column / SPAN)
            grid[y][column] = "·" if grid[y][column] == " " else grid[y][column]
        for column, y in ((0, start), (SPAN, end)):
            grid[y][column] = "◉" if grid[y][column] in "○●" and grid[y][column] != mark else mark
    width = max(len(_figure(high)), len(_figure(low)))
    lines = [title] if title else []
    for y, cells in enumerate(grid):
        label = _figure(high) if y == 0 else _figure(low) if y == HEIGHT - 1 else ""
        lines.append(f"{label.rjust(width)} ┤{''.join(cells)}".rstrip())
    lines.append(" " * width + " └" + "─" * (SPAN + 1))
    lines.append(" " * width + f"  {a} off".ljust(SPAN - 1) + f"{a} on")
    lines.append(f"○ {b} off: {_figure(means[(-1, -1)])} → {_figure(means[(1, -1)])}  "
                 f"● {b} on: {_figure(means[(-1, 1)])} → {_figure(means[(1, 1)])}")
    return lines


def _figure(value: float) -> str:
    return ratio_text(value, 1) if abs(value) >= 10 else ratio_text(value)


class InteractionPlot(Static):
    """One pair's plot; `show` draws it from its corners' means (or says they are not all measured yet)."""

    DEFAULT_CSS = """
    InteractionPlot { height: auto; width: auto; margin: 0 2 1 0; }
    """

    def __init__(self, a: str, b: str, **kwargs) -> None:
        super().__init__("", markup=False, **kwargs)
        self.pair = (a, b)

    def show(self, means: dict[tuple[int, int], float] | None, title: str = "") -> None:
        a, b = self.pair
        if means is None:
            self.update(f"{title or f'{a} × {b}'}\n(its four corners are not all measured yet)")
            return
        self.update("\n".join(plot_lines(a, b, means, title)))
