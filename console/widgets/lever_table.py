"""The lever table: one row per lever with its state, last estimate ± CI, stale mark and plan doc."""
from __future__ import annotations

from collections.abc import Collection

from dataclasses import dataclass
from pathlib import PurePosixPath

from textual.message import Message
from textual.widgets import DataTable

from optseq.console.widgets.figures import last_estimate, plain_title, state_text

COLUMNS = (("id", "lever", 10), ("title", "title", 16), ("state", "state", 13),
           ("estimate", "estimate", 17), ("stale", "!", 1), ("plan", "plan", 10))
"""(key, header, width at 80 columns): every column fits an 80-column terminal."""
GROWS = {"title": 0.6, "plan": 0.4}
"""Where the columns beyond 80 go on a wider terminal."""


class LeverTable(DataTable):
    """Levers in plan order; the cursor row is the lever every action applies to."""

    @dataclass
    class Highlighted(Message):
        """The cursor moved to another lever."""

        lever: str

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._ids: list[str] = []
        self._rows: dict[str, tuple[str, ...]] = {}
        self._widths: dict[str, int] = {}

    def on_mount(self) -> None:
        self._layout(80)

    def on_resize(self, event) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        extra = max(0, width - 80)
        widths = {key: w + int(extra * GROWS.get(key, 0)) for key, _, w in COLUMNS}
        if widths == self._widths:
            return
        self._widths = widths
        row = self.cursor_row
        self.clear(columns=True)
        for key, header, _ in COLUMNS:
            self.add_column(header, key=key, width=widths[key])
        for lever_id in self._ids:
            self.add_row(*self._rows[lever_id], key=lever_id)
        if self._ids:
            self.move_cursor(row=row)

    @property
    def selected(self) -> str | None:
        if not self._ids or self.cursor_row is None or not 0 <= self.cursor_row < len(self._ids):
            return None
        return self._ids[self.cursor_row]

    def show(self, views: list[dict], runs: list[dict], priors: dict[str, float | None],
             running: Collection[str] = ()) -> None:
        """Fill or update the rows in place, so the cursor stays where the user left it."""
        rows = {v["id"]: self._cells(v, [r for r in runs if r.get("lever") == v["id"]], priors.get(v["id"]),
                                     running) for v in views}
        ids = [v["id"] for v in views]
        self._rows = rows
        if ids != self._ids:
            self.clear()
            self._ids = ids
            for lever_id in ids:
                self.add_row(*rows[lever_id], key=lever_id)
            return
        for lever_id, cells in rows.items():
            for (key, _, _), value in zip(COLUMNS, cells):
                self.update_cell(lever_id, key, value)

    @staticmethod
    def _cells(view: dict, runs: list[dict], prior: float | None, running: Collection[str] = ()) -> tuple[str, ...]:
        state = "running" if view["id"] in running else state_text(view)
        plan = PurePosixPath(view["plan_doc"]).name if view.get("plan_doc") else "-"
        return (view["id"], plain_title(view["title"]), state, last_estimate(view, runs, prior),
                "!" if view.get("stale") else "", plan)

    def cell_text(self, lever_id: str, column: str) -> str:
        """What a cell shows (tests and the tmux check read the table through this)."""
        return str(self.get_cell(lever_id, column))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value is not None:
            self.post_message(self.Highlighted(event.row_key.value))

    def select(self, lever_id: str) -> None:
        if lever_id in self._ids:
            self.move_cursor(row=self._ids.index(lever_id))
