"""A small modal form: labelled fields, a one-line error, Enter to submit, Escape to cancel."""
from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static


class FormInvalid(ValueError):
    """What is missing or wrong in the form; str() is shown on the dialog's error line."""


class FormDialog(ModalScreen[dict | None]):
    """Subclasses yield their fields from `fields()` and turn them into a result in `result()`."""

    DEFAULT_CSS = """
    FormDialog { align: center middle; }
    FormDialog > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    FormDialog .form-title { text-style: bold; width: 1fr; }
    FormDialog Grid { grid-size: 2; grid-columns: 12 1fr; grid-rows: auto; height: auto; grid-gutter: 0 1; }
    FormDialog Grid > Label { padding: 0 0; height: 1; }
    FormDialog .form-error { color: $error; height: auto; }
    FormDialog .form-buttons { height: auto; align-horizontal: right; }
    FormDialog Button { min-width: 10; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "submit", "Submit", show=False)]

    TITLE_TEXT = ""
    """The dialog's first line."""

    def __init__(self, title: str | None = None) -> None:
        super().__init__()
        self.title_text = title or self.TITLE_TEXT

    def compose(self):
        with Vertical():
            yield Static(self.title_text, classes="form-title")
            with Grid():
                for label, widget in self.fields():
                    yield Label(label)
                    yield widget
            yield Label("", classes="form-error", id="form-error")
            with Horizontal(classes="form-buttons"):
                yield Button("OK", variant="primary", id="ok", compact=True)
                yield Label(" ")
                yield Button("Cancel", id="cancel", compact=True)

    def fields(self):
        """(label, widget) pairs in focus order."""
        return []

    def result(self) -> dict[str, Any]:
        """The form's values; raise FormInvalid naming what is wrong."""
        return {}

    @staticmethod
    def chosen(select: Select, what: str) -> Any:
        if select.value is Select.NULL:
            raise FormInvalid(f"choose {what}")
        return select.value

    def action_submit(self) -> None:
        try:
            values = self.result()
        except FormInvalid as exc:
            self.query_one("#form-error", Label).update(str(exc))
            return
        self.dismiss(values)

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
