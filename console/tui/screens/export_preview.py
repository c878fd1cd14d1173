"""The exported markdown, rendered, with the file it was written to."""
from __future__ import annotations

from rich.markdown import Markdown
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Static


class ExportPreview(Screen):
    """The markdown just written, rendered; Escape returns to the main screen.

    The doc is one Rich renderable in a scrolling pane, drawn with the screen's first paint: the preview is
    there as soon as the file is. (Textual's MarkdownViewer mounts a widget per block, table cell and fence,
    in a worker after the screen is up: seconds of spinner on a busy machine for a doc already on disk, and
    a worker that outlived its screen when Escape came first.)
    """

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, markdown: str, path: str) -> None:
        super().__init__()
        self.markdown = markdown
        self.path = path

    def compose(self):
        yield Label(f"wrote {self.path}  (Escape to go back)", id="export-path", markup=False)
        with VerticalScroll(id="export-viewer"):
            # links print their target beside the text: a terminal cannot follow the doc's relative ones
            yield Static(Markdown(self.markdown, hyperlinks=False), id="export-doc")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#export-viewer").focus()  # arrows and Page Up/Down scroll the doc
