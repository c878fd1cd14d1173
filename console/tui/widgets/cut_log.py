"""The run's log as the run tab shows it: a line longer than the pane is cut at its edge with an ellipsis, so a cut
line reads as cut (`next launch: 3 pa…`), not as a sentence that ended there. The run's log file has it whole."""
from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Log

ELLIPSIS = "…"


class CutLog(Log):
    """Textual's Log, its lines cut with an ellipsis where they pass the right edge."""

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        rich_style = self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, rich_style)
        line = self._render_line_strip(y, rich_style)
        shown = min(width, self.scrollable_content_region.width)  # the vertical scrollbar covers the last columns
        if shown > 1 and line.cell_length > scroll_x + shown:
            line = Strip.join([line.crop(scroll_x, scroll_x + shown - 1), Strip([Segment(ELLIPSIS, rich_style)], 1),
                               Strip.blank(width - shown, rich_style)])
        else:
            line = line.crop_extend(scroll_x, scroll_x + width, rich_style)
        return line.apply_offsets(scroll_x, y)
