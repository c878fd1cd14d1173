"""What the footer shows: at 80 columns `?` and `q` always fit; every screen, modal or not, shows its own keys."""
from __future__ import annotations

from dataclasses import replace

from textual.screen import ModalScreen
from textual.widgets import Footer

FULL_FROM = 96
"""Screen width from which every shown key fits in the footer, with the palette hint docked on its right."""
NARROW_HIDDEN = {"mark_plan", "set_fact"}
"""Left to the help screen, the palette and the table's why / next column below FULL_FROM."""
READY_FROM = 106
"""R as well, from here: with x shown during a run, every key still ends before the palette hint."""
SHORT = {"run_next": "Next", "cancel_run": "Cancel", "mark_plan": "Plan", "run_ready_parallel": "Ready ∥"}
"""Footer labels shorter than the bindings' descriptions (which the palette and the help screen keep)."""


def footer_bindings(bindings: dict, width: int, running: bool) -> dict:
    """`Screen.active_bindings` as the footer should draw them at `width`: short labels, cancel only while a run
    goes, and below FULL_FROM the keys that would push `?` and `q` off screen hidden (they still work: only the
    footer skips them)."""
    shown = {}
    for key, active in bindings.items():
        binding = active.binding
        action = binding.action
        # x with nothing running only says a key exists that does nothing now (the help screen still lists it)
        hide = binding.show and ((action == "cancel_run" and not running) or
                                 (width < FULL_FROM and action in NARROW_HIDDEN) or
                                 (width < READY_FROM and action == "run_ready_parallel"))
        if action in SHORT or hide:
            binding = replace(binding, description=SHORT.get(action, binding.description),
                              show=binding.show and not hide)
        shown[key] = active._replace(binding=binding)
    return shown


def give_footer(screen) -> None:
    """A modal drawn over the main screen would show the main screen's keys in that screen's footer: give it a
    footer of its own (docked over the one below), unless it composed one."""
    ours = type(screen).__module__.startswith("optseq.")  # Textual's command palette keeps its own look
    if ours and isinstance(screen, ModalScreen) and screen.is_attached and not screen.query(Footer):
        screen.mount(Footer(compact=True))
        screen.call_after_refresh(screen.refresh_bindings)  # a footer draws once told the bindings changed
