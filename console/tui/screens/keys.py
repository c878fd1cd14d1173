"""The main screen's keys: every action on one (the command palette and the help screen are built from ACTIONS),
the detail's scroll keys, and the views' numbers."""
from __future__ import annotations

from textual.binding import Binding

WRITES = {"run_selected", "run_next", "run_ready_parallel", "watch", "cancel_run", "record_criterion", "mark_plan",
          "set_fact", "decide", "sync", "screen"}
"""Actions that write to the store: disabled while another optseq holds it."""
VIEWS = ("detail", "graph", "run", "history", "screen")

ACTIONS = [
    Binding("r", "run_selected", "Run", tooltip="run the selected lever"),
    Binding("n", "run_next", "Run next", tooltip="run the lever `next` recommends"),
    Binding("R", "run_ready_parallel", "Run ready ∥",
            tooltip="measure the ready levers several at once (optseq --parallel N sets how many; on a cluster, "
                    "one per node), each decided as it lands"),
    Binding("w", "watch", "Watch", tooltip="re-check every adopted gain on the current code and stack (one lever "
                                            "at a time here; on a cluster, --parallel at once): holds or eroded"),
    Binding("s", "screen", "Screen", tooltip="decide the ready levers that compose together by a two-level design "
                                             "(optseq --run screen): effects, calls, interactions"),
    Binding("x", "cancel_run", "Cancel run", tooltip="stop the running lever (its whole process group); during R, "
                                                     "the selected lever's run alone"),
    Binding("c", "record_criterion", "Criterion", tooltip="record a criterion result of a decision lever"),
    Binding("p", "mark_plan", "Plan written", tooltip="mark the selected lever's plan as written"),
    Binding("f", "set_fact", "Fact", tooltip="set a fact that gates read"),
    Binding("d", "decide", "Decide", tooltip="decide the selected lever by hand (rationale required)"),
    Binding("e", "export", "Export", tooltip="write the plan as markdown and preview it"),
    Binding("S", "sync", "Sync", tooltip="optseq sync with the remote this store last synced with (else origin): "
                                         "push this store's new records, merge every other writer's"),
    Binding("question_mark,f1", "help", "Help", tooltip="keys and what they do"),
    Binding("q", "app.quit", "Quit", tooltip="quit (asks first while a lever runs)"),
]
"""Every action on a key; the command palette and the help screen are built from this list."""


SCROLL = Binding.Group("Scroll detail", compact=True)
DETAIL_KEYS = [
    Binding("shift+down", "detail_down", "Detail down", group=SCROLL, key_display="⇧↓"),
    Binding("shift+up", "detail_up", "Detail up", group=SCROLL, key_display="⇧↑"),
    Binding("shift+pagedown", "detail_page(1)", "Detail page down", show=False),
    Binding("shift+pageup", "detail_page(-1)", "Detail page up", show=False),
]
"""The detail pane scrolled from the table, the focus left where the arrows still move the lever (the help says
so; the footer names them where it has room)."""

IDLE_X = Binding("x", "nothing_running", show=False)
"""x while nothing runs: Textual tries a key's next binding when the first one's action is off, so the palette and
the footer still offer no cancel, and the key still answers."""
