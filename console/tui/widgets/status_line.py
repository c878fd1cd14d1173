"""One line under the table: what is next, what is running, and why the console cannot write, if it cannot."""
from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from optseq.console.words.branch_words import unmerged, unmerged_note
from optseq.console.tui.widgets.next_step import todo_hint

if TYPE_CHECKING:
    from optseq.state.api import Status


class StatusLine(Static):
    """`next: option_b (n runs it) · read-only: …`, `running: cython_bot`, or `next: nothing to run · press p on
    option_b: …` (the first thing only the user can do, as the key to press); `text` is the plain line."""

    DEFAULT_CSS = """
    StatusLine { height: 1; width: 1fr; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    text: str = ""
    sync_step: str = ""
    _parts: list[str] = []
    """What a sync under way (S) is doing: said first until it ends."""

    def say(self, step: str) -> None:
        self.sync_step = step
        self._draw()

    def show(self, status: Status, running: Collection[str], holder: str | None) -> None:
        todo = status.todo
        if running:
            # n waits for this run to end, and which lever is next depends on whether the store has seen the
            # run start yet ("next: x · running: x"): while a run goes the line says only what runs
            parts = []
        elif status.next:
            parts = [f"next: {status.next} (n runs it)"]
        else:  # nothing can run: the first thing only the user can do (the full list is in optseq status)
            parts = ["next: nothing to run"]
            # a merge is the user's too, though not the state layer's to-do (git's, not optseq's)
            merges = [v for v in status.levers if unmerged(v)]
            if todo:
                parts.append(todo_hint(todo[0]) + (f" (+{len(todo) - 1} more)" if len(todo) > 1 else ""))
            elif merges:
                parts.append(f"{merges[0].id}: {unmerged_note(merges[0])} to put it in the stack")
        if running:
            parts.append(f"running: {', '.join(sorted(running))}")
        if holder:
            parts.append(f"read-only: {holder}")
        for c in status.found_conflicts:  # decided concurrently by two writers (optseq sync): said first
            parts.insert(0, f"conflict: {c['lever']} ({c['holds']['writer']} vs {c['other']['writer']})")
        warnings = status.warnings
        if warnings:
            parts.append(f"{len(warnings)} warning{'s' if len(warnings) > 1 else ''} (optseq status)")
        self._parts = parts
        self.set_class(bool(holder), "-readonly")
        self._draw()

    def _draw(self) -> None:
        self.text = " · ".join(([self.sync_step] if self.sync_step else []) + self._parts)
        self.update(Text(self.text))  # reasons may hold brackets: never markup
