"""The exported markdown, rendered, with the file it was written to."""
from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, MarkdownViewer


class ExportPreview(Screen):
    """The markdown just written, rendered; Escape returns to the main screen.

    A long doc takes seconds to render on a busy machine: the viewer is mounted empty and covered by a
    loading indicator while the document renders in a worker, rather than a blank pane that looks like an
    empty export.
    """

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, markdown: str, path: str) -> None:
        super().__init__()
        self.markdown = markdown
        self.path = path
        self.rendered = False

    def compose(self):
        yield Label(f"wrote {self.path}  (Escape to go back)", id="export-path", markup=False)
        yield MarkdownViewer(show_table_of_contents=False, id="export-viewer")
        yield Footer()

    def on_mount(self) -> None:
        # the viewer has rendered its empty document by now (a screen mounts after its children), so the
        # export's own render cannot be overwritten by it
        viewer = self.query_one(MarkdownViewer)
        viewer.set_loading(True)
        viewer.focus()
        self.run_worker(self._show_doc(viewer), name="render-export")

    async def _show_doc(self, viewer: MarkdownViewer) -> None:
        try:
            await viewer.document.update(self.markdown)
        finally:
            viewer.set_loading(False)
            self.rendered = True
