"""A yes/no question: quitting while a lever runs, replacing a file optseq did not write."""
from __future__ import annotations

from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmDialog(ModalScreen[bool]):
    """Dismisses with True for yes; y / n / Escape answer from the keyboard."""

    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical {
        width: 60; max-width: 100%; height: auto; border: round $warning; padding: 0 1; background: $surface;
    }
    ConfirmDialog Horizontal { height: auto; align-horizontal: right; }
    """

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self):
        with Vertical():
            yield Static(self.question, id="question")
            with Horizontal():
                yield Button(f"{self.yes} (y)", variant="error", id="yes", compact=True)
                yield Label(" ")
                yield Button(f"{self.no} (n)", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
