"""The lever table: one row per lever with its state, last estimate ± CI, hours saved, what to do next and plan doc."""
from __future__ import annotations

from collections.abc import Collection, Sequence

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from optseq.console.words.figures import at_ci, last_estimate, measured_stats, plain_title, shown_state
from optseq.console.tui.widgets.next_step import fitted

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus, Run

COLUMNS = (("id", "lever", 10), ("title", "title", 16), ("state", "state", 13),
           ("estimate", "estimate", 17), ("stale", "!", 1), ("saved", "saved h", 7),
           ("why", "why / next", 19), ("plan", "plan", 10))
"""(key, header, base width): the base widths of the columns shown at 80 fit an 80-column terminal."""
SHOWN_FROM = {"title": 100, "plan": 150}
"""Table width from which a column is shown: below it the detail pane carries it (cell_text still reads it)."""
GROWS = {"why": 0.5, "title": 0.3, "plan": 0.2}
"""Where the width left over goes, once the id column fits its longest id."""
PAD = 2
"""A DataTable cell's padding, one each side."""


class LeverTable(DataTable):
    """Levers in plan order; the cursor row is the lever every action applies to."""

    @dataclass
    class Highlighted(Message):
        """The cursor moved to another lever."""

        lever: str

    # a row cursor has no column to move to: Home and End go to the first and last lever, as in a list
    BINDINGS = [Binding("home", "scroll_top", "First lever", show=False),
                Binding("end", "scroll_bottom", "Last lever", show=False)]

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._ids: list[str] = []
        self._rows: dict[str, tuple[str, ...]] = {}
        self._widths: dict[str, int] = {}
        self._width = 80

    def on_mount(self) -> None:
        self._layout(80)

    def on_resize(self, event) -> None:
        self._layout(event.size.width)

    def widths_for(self, width: int) -> dict[str, int]:
        """Column widths at a table width: the id column takes what its longest id needs first
        (cut with … only when even that does not fit), then the rest grows."""
        widths = {key: w for key, _, w in COLUMNS if width >= SHOWN_FROM.get(key, 0)}
        longest = max([len(i) for i in self._ids] + [len("lever")])
        widths["id"] = min(longest, widths["id"])

        def spare_width() -> int:
            return max(0, width - 1 - sum(w + PAD for w in widths.values()))

        for optional in sorted(SHOWN_FROM, key=lambda column: SHOWN_FROM[column], reverse=True):
            if optional in widths and spare_width() < longest - widths["id"]:
                del widths[optional]  # an id cut short costs more than a column the detail pane also shows
        spare = spare_width()
        grow_id = min(spare, longest - widths["id"])
        widths["id"] += grow_id
        spare -= grow_id
        share = {k: g for k, g in GROWS.items() if k in widths}
        total = sum(share.values())
        for key, g in share.items():
            widths[key] += int(spare * g / total)
        return widths

    def _layout(self, width: int) -> None:
        self._width = width
        widths = self.widths_for(width)
        if widths == self._widths:
            return
        self._widths = widths
        row = self.cursor_row
        self.clear(columns=True)
        for key, header, _ in COLUMNS:
            if key in widths:
                self.add_column(header, key=key, width=widths[key])
        for lever_id in self._ids:
            self.add_row(*self._shown(lever_id), key=lever_id)
        if self._ids:
            self.move_cursor(row=row)

    def _shown(self, lever_id: str) -> list[Text]:
        """The row as drawn: the shown columns only, each cut to its width with an ellipsis."""
        cells = []
        for (key, _, _), value in zip(COLUMNS, self._rows[lever_id]):
            if key in self._widths:
                text = Text(fitted(value, self._widths[key]) if key == "why" else value, no_wrap=True)
                text.truncate(self._widths[key], overflow="ellipsis")
                cells.append(text)
        return cells

    @property
    def selected(self) -> str | None:
        if not self._ids or self.cursor_row is None or not 0 <= self.cursor_row < len(self._ids):
            return None
        return self._ids[self.cursor_row]

    def show(self, views: list[LeverStatus], runs: Sequence[Run], priors: dict[str, float | None],
             running: Collection[str] = (), steps: dict[str, str] | None = None) -> None:
        """Fill or update the rows in place, so the cursor stays where the user left it. `runs`: the views'
        latest_runs, typed as the run index kept them."""
        steps = steps or {}
        rows = {v.id: self._cells(v, [r for r in runs if r.lever == v.id], priors.get(v.id),
                                  running, steps.get(v.id, "")) for v in views}
        ids = [v.id for v in views]
        self._rows = rows
        if ids != self._ids:
            self._ids = ids
            self._widths = {}  # the id column fits the new ids
            self._layout(self._width)
            return
        for lever_id in ids:
            shown = [key for key, _, _ in COLUMNS if key in self._widths]
            for key, value in zip(shown, self._shown(lever_id)):
                self.update_cell(lever_id, key, value)

    @staticmethod
    def _cells(view: LeverStatus, runs: list[Run], prior: float | None, running: Collection[str] = (),
               step: str = "") -> tuple[str, ...]:
        state = "running" if view.id in running else shown_state(view)
        plan = PurePosixPath(view.plan_doc).name if view.plan_doc else "-"
        saved = _saved(view, runs)
        return (view.id, plain_title(view.title), state, last_estimate(view, runs, prior),
                "!" if view.stale else "", saved, step, plan)

    def cell_text(self, lever_id: str, column: str) -> str:
        """What a cell holds in full, shown or not (tests and the tmux check read the table through this)."""
        index = [key for key, _, _ in COLUMNS].index(column)
        return self._rows[lever_id][index]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(self.Highlighted(event.row_key.value))

    def select(self, lever_id: str) -> None:
        if lever_id in self._ids:
            self.move_cursor(row=self._ids.index(lever_id))


PENDING = "…"
"""The saved-hours cell before the calculus has filled it (just after the first paint)."""


SIZE_MARK = " ci"
"""After hours saved worked out from a ratio measured on the reference workload at CI size, not the plan's
workload (the detail pane says it in full): 35.8 h from a CI-size ratio is not the team's 35.8 h."""


def _saved(view: LeverStatus, runs: list[Run]) -> str:
    if not view.has_hours:
        return PENDING
    hours = view.saved
    if hours is None:
        return "-"
    from optseq.state.api import fmt_h  # imported with the calculus the column waits for

    if not at_ci(measured_stats(view, runs)):
        return fmt_h(hours)
    width = dict((key, w) for key, _, w in COLUMNS)["saved"] - len(SIZE_MARK)
    shown = fmt_h(hours)
    if len(shown) > width:  # the mark stays: fewer digits, never a cut one
        shown = f"{hours:.0f}" if abs(hours) >= 1 else "<0.1" if abs(hours) < 0.1 else f"{hours:.1f}"
    return shown + SIZE_MARK
