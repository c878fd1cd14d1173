"""Export the plan as markdown: where to write it and in which language."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from textual.markup import escape
from textual.widget import Widget
from textual.widgets import Input, Select
from textual.worker import Worker, WorkerState

from optseq.console.tui.dialogs.confirm import ConfirmDialog
from optseq.console.tui.dialogs.form import FormDialog, FormInvalid, select, text_input
from optseq.state.api import is_export
from optseq.state.api import TAIL_BYTES, ExportTargetError, NotAChart, NotAnExport


def plain(exc: BaseException) -> str:
    """One line in words: `[Errno 21] Is a directory: 'x'` becomes `x: is a directory`."""
    if isinstance(exc, OSError) and exc.strerror:
        words = exc.strerror[0].lower() + exc.strerror[1:]
        return f"{exc.filename}: {words}" if exc.filename else words
    return str(exc)


def existing(path: str) -> str | None:
    """What a replace would overwrite at `path`: "export" (an earlier optseq export), "file" (anything
    else), or None (nothing, or an empty file: nothing to lose)."""
    real = os.path.realpath(path)
    try:
        if not stat.S_ISREG(os.stat(real).st_mode):
            return None  # a directory, a device: the export's own checks refuse it, with the reason
        with open(real, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None
            f.seek(max(0, size - TAIL_BYTES))
            return "export" if is_export(f.read(TAIL_BYTES).decode("utf-8", errors="replace")) else "file"
    except (OSError, ValueError):
        return None  # missing, or unreadable: the export's own checks say what is wrong


class ExportDialog(FormDialog):
    """Defaults to the path it is given (the console's: docs/ beside the state directory) and the plan's own
    language.

    With `export` (path, lang, force -> (path written, markdown)), OK writes the export here: in a thread,
    with the dialog showing it is busy; an existing file is replaced only after a yes; a refusal stays on
    the dialog's error line with the path still there to fix. It closes with (path, markdown) once written.
    """

    AUTO_FOCUS = "#path"

    def __init__(self, default_path: str, lang: str, export=None) -> None:
        super().__init__("export the plan as markdown")
        self.default_path = default_path
        self.lang = lang
        self.export = export
        self.busy = False
        self._focus_before: Widget | None = None
        """What had the focus when the write began: given back if the dialog stays open."""

    def fields(self):
        yield "file", text_input("path", self.default_path)
        yield "language", select([("ko", "ko"), ("en", "en")], "lang", self.lang)

    def result(self) -> dict:
        path = self.query_one("#path", Input).value.strip()
        if not path:
            raise FormInvalid("give a file to write")
        return {"path": path, "lang": self.chosen(self.query_one("#lang", Select), "a language")}

    def action_submit(self) -> None:
        if self.busy:
            return
        if self.export is None:
            super().action_submit()
            return
        try:
            values = self.result()
        except FormInvalid as exc:
            self.show_error(str(exc))
            return
        target = os.path.expanduser(values["path"])
        found = existing(target)
        if found is None:
            self._write(target, values["lang"], force=False)
            return
        what = "an earlier optseq export" if found == "export" else "not written by optseq export"
        # an optseq export is replaced unforced: a chart beside it that optseq did not write is still asked about
        self._confirm(f"{escape(target)} exists ({what}). Replace it?", target, values["lang"], force=found == "file")

    def _confirm(self, question: str, target: str, lang: str, force: bool) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self._write(target, lang, force)
            else:
                self.show_error(f"{target} kept; give another file to write", "store")
        self.app.push_screen(ConfirmDialog(question, "Replace", "Keep"), answered)

    def _write(self, target: str, lang: str, force: bool) -> None:
        self.busy = True
        self.show_error("")
        # the busy sign covers the buttons, never the path: a cover takes the focus from what it hides, in a frame
        # drawn whenever the machine gets to it, and an Enter meant for the path then lands on Cancel
        self._focus_before = self.focused
        self.query_one(".form-buttons").loading = True
        self._job = (target, lang)
        self.run_worker(lambda: self.export(target, lang, force), name="export", thread=True, exit_on_error=False)

    def action_cancel(self) -> None:
        if not self.busy:  # the file is being written: closing now would hide whether it was
            super().action_cancel()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "export" or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        self.busy = False
        self.query_one(".form-buttons").loading = False
        if event.state == WorkerState.SUCCESS:
            written = event.worker.result
            assert written is not None  # `export` returns what it wrote, or raises
            path, text = written
            self.dismiss((Path(path), text))
            return
        focus = self._focus_before
        if focus is not None and focus.is_attached:
            self.set_focus(focus)
        exc = event.worker.error
        assert exc is not None  # a worker in ERROR holds what it raised
        target, lang = self._job
        if isinstance(exc, NotAnExport):  # a chart (or the doc, replaced meanwhile) optseq did not write
            what = exc.path if isinstance(exc, NotAChart) else target
            self._confirm(f"{escape(what)} exists and was not written by optseq export. Replace it?",
                          target, lang, force=True)
        elif isinstance(exc, (ExportTargetError, OSError, ValueError)):
            self.show_error(plain(exc), "store")
        else:
            self.show_error(f"export failed: {plain(exc)}", "store")
