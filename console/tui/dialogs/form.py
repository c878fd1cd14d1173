"""A small modal form: labelled fields, a one-line error, Enter to submit, Escape to cancel.

Every dialog reports what is wrong the same way: on its own error line, above the buttons, with the dialog
left open and what was typed kept. A refusal of the store (a decision the plan does not allow, a plan doc
that does not exist) is shown there too, so fixing one field never means typing the others again.
"""
from __future__ import annotations

from typing import Any, Callable

from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from optseq.state.api import InputError
from optseq.state.api import StoreError


class FormInvalid(ValueError):
    """What is missing or wrong in the form; str() is shown on the dialog's error line."""


REFUSALS = (InputError, StoreError)
"""The store's one-line refusals: shown on the error line, never as a traceback or a toast."""


class FormDialog(ModalScreen[Any]):
    """Subclasses yield their fields from `fields()` and turn them into a result in `result()`.

    With `apply` set (the caller's store write), OK runs it while the dialog is still open: the dialog
    closes with what it returned, or stays open with its refusal on the error line.
    """

    DEFAULT_CSS = """
    FormDialog { align: center middle; }
    FormDialog > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    FormDialog .form-title { text-style: bold; width: 1fr; }
    FormDialog Grid { grid-size: 2; grid-columns: 12 1fr; grid-rows: auto; height: auto; grid-gutter: 0 1; }
    FormDialog Grid > Label { padding: 0 0; height: 1; }
    FormDialog .form-note { color: $text-muted; height: auto; width: 1fr; }
    FormDialog .form-error { color: $text-error; height: auto; width: 1fr; }
    FormDialog .form-buttons { height: auto; align-horizontal: right; }
    FormDialog Button { min-width: 10; }
    /* An open list drops down inside the dialog, pushing the rows below it down, instead of floating over
       the error line and past the dialog's border as Select's screen overlay does. */
    FormDialog Select > SelectOverlay { overlay: none; constrain: none; max-height: 8; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "submit", "Submit", show=False)]

    TITLE_TEXT = ""
    """The dialog's first line."""

    def __init__(self, title: str | None = None) -> None:
        super().__init__()
        self.title_text = title or self.TITLE_TEXT
        self.apply: Callable[[dict], Any] | None = None
        """The write OK performs before the dialog closes; None closes it with the form's values."""
        self.error_from: str | None = None
        """What put the error line up: "form" (re-checked as fields change), "store" (cleared on any change)."""

    def compose(self):
        with Vertical():
            yield Static(self.title_text, classes="form-title")
            with Grid():
                for label, widget in self.fields():
                    yield Label(label)
                    yield widget
            yield from self.notes()
            yield Label("", classes="form-error", id="form-error")
            with Horizontal(classes="form-buttons"):
                yield Button("OK", variant="primary", id="ok", compact=True)
                yield Label(" ")
                yield Button("Cancel", id="cancel", compact=True)

    def fields(self):
        """(label, widget) pairs in focus order."""
        return []

    def notes(self):
        """Widgets shown under the fields (what the choices mean); none by default."""
        return []

    def result(self) -> dict[str, Any]:
        """The form's values; raise FormInvalid naming what is wrong. Must not change anything."""
        return {}

    @staticmethod
    def chosen(select: Select, what: str) -> Any:
        if select.value is Select.NULL:
            raise FormInvalid(f"choose {what}")
        return select.value

    # -- the error line ---------------------------------------------------------------------------
    @property
    def error(self) -> str:
        return str(self.query_one("#form-error", Label).content)

    def show_error(self, text: str, source: str = "form") -> None:
        self.error_from = source if text else None
        self.query_one("#form-error", Label).update(text)

    def recheck(self) -> None:
        """A field changed: a form error goes (or becomes the next one) once its field is fixed."""
        if self.error_from == "store":
            self.show_error("")
        elif self.error_from == "form":
            try:
                self.result()
            except FormInvalid as exc:
                self.show_error(str(exc))
            else:
                self.show_error("")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.recheck()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.recheck()

    # -- submitting -------------------------------------------------------------------------------
    def action_submit(self) -> None:
        try:
            values = self.result()
        except FormInvalid as exc:
            self.show_error(str(exc))
            return
        if self.apply is None:
            self.dismiss(values)
            return
        try:
            done = self.apply(values)
        except REFUSALS as exc:
            self.show_error(str(exc), "store")
            return
        self.dismiss(done)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self.action_submit()
        else:
            self.action_cancel()


def select(options: list[tuple[str, Any]], id: str, value: Any = Select.NULL, prompt: str = "choose") -> Select:
    """A one-line Select that keeps to the dialog's width."""
    return Select(options, value=value, id=id, prompt=prompt, compact=True, allow_blank=value is Select.NULL)


def text_input(id: str, value: str = "", placeholder: str = "") -> Input:
    return Input(value=value, placeholder=placeholder, id=id, compact=True)
