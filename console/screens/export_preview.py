"""The exported markdown, rendered, with the file it was written to."""
from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, MarkdownViewer


class ExportPreview(Screen):
    """The markdown just written, rendered; Escape returns to the main screen."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, markdown: str, path: str) -> None:
        super().__init__()
        self.markdown = markdown
        self.path = path

    def compose(self):
        yield Label(f"wrote {self.path}  (Escape to go back)", id="export-path")
        yield MarkdownViewer(self.markdown, show_table_of_contents=False, id="export-viewer")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(MarkdownViewer).focus()
