"""The keys, drawn from the main screen's bindings so the list cannot drift from them."""
from __future__ import annotations

from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

ABOUT = """\
The keys that change the plan write the same records as `optseq record / plan / fact /
decide / --run`. The table's cursor row is the lever an action applies to, and its
*why / next* column says which key to press on which lever (`p on option_b: write its
plan`); cut short at 80 columns to the key and its lever, it is whole on the detail's `next:` line.
At 80 columns the footer shows the common keys only; every key is listed here, and Ctrl+P
opens the command palette with every action, view and lever by name.

The arrows move the table's cursor; Shift+↑ / Shift+↓ scroll the detail pane a line (Shift+PgUp /
Shift+PgDn a page) without leaving the table. Tab moves the focus into the panes as well.

*unmerged*: a branch lever (`candidate_ref`) adopted but not merged yet; not in the stack until you merge it.
*eroded*: an adopted lever whose gain a watch (`w`) found gone on the current code; it stays in the stack until
you decide it again (`d`) or re-run it (`r`).
"""


class HelpScreen(ModalScreen[None]):
    """A modal table of every key; Escape, q or ? close it."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "app.pop_screen", "Close")]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self.bindings = bindings

    def compose(self):
        rows = ["| key | action | what it does |", "| --- | --- | --- |"]
        for b in self.bindings:
            keys = ", ".join(_key(k) for k in b.key.split(","))
            rows.append(f"| {keys} | {b.description} | {b.tooltip} |")
        rows.append("| 1 2 3 4 | views | detail, dependency graph, live run, history plot |")
        rows.append("| shift+↑ shift+↓ | scroll detail | the detail pane a line up or down, the cursor left in "
                    "the table (shift+pgup / shift+pgdn: a page) |")
        rows.append("| ctrl+p | command palette | every action by name |")
        with VerticalScroll():
            yield Markdown("# optseq keys\n\n" + ABOUT + "\n" + "\n".join(rows) + "\n\nEscape closes this help.")


def _key(key: str) -> str:
    return {"question_mark": "?", "escape": "esc"}.get(key.strip(), key.strip())
