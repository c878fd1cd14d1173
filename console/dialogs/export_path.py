"""Export the plan as markdown: where to write it and in which language."""
from __future__ import annotations

from textual.widgets import Input, Select

from optseq.console.dialogs.form import FormDialog, FormInvalid, select, text_input


class ExportDialog(FormDialog):
    """Defaults to the working directory (never the state directory) and the plan's own language."""

    AUTO_FOCUS = "#path"

    def __init__(self, default_path: str, lang: str) -> None:
        super().__init__("export the plan as markdown")
        self.default_path = default_path
        self.lang = lang

    def fields(self):
        yield "file", text_input("path", self.default_path)
        yield "language", select([("ko", "ko"), ("en", "en")], "lang", self.lang)

    def result(self) -> dict:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            raise FormInvalid("give a file to write")
        return {"path": path, "lang": self.chosen(self.query_one("#lang", Select), "a language")}
