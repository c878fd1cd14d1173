"""The banner over the main screen while the plan file on disk is not a valid plan: the loader's one line (file,
key, line), and that the console still shows the plan it read last."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

KEPT = "showing the last good plan until the file is fixed"


class PlanBanner(Static):
    """Shown (class -shown) while the edit is broken; hidden again once the file reads."""

    text = ""

    def show_error(self, error: str) -> None:
        self.text = f"{error} · {KEPT}"
        self.update(Text(self.text))  # the file's keys and values may hold brackets: never markup
        self.set_class(True, "-shown")

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")
