"""What the footer shows: at 80 columns `?` and `q` always fit; every screen, modal or not, shows its own keys."""
from __future__ import annotations

from dataclasses import replace

from textual.screen import ModalScreen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FULL_FROM = 96
"""Screen width from which every shown key fits in the footer, with the palette hint docked on its right."""
NARROW_HIDDEN = {"mark_plan", "set_fact"}
"""Left to the help screen, the palette and the table's why / next column below FULL_FROM."""
READY_FROM = 116
"""R, s and S as well, from here (S only from SCROLL_FROM while a run goes, s never while one goes: it is refused
then): with x shown during a run, every key still ends before the palette hint."""
RUNNING_HIDDEN = {"watch"}
"""Left to the help screen and the palette while a run goes below READY_FROM: x takes its room, and `q Quit` stays
on screen (w is refused while a run goes)."""
SCROLL_FROM = 142
"""The detail's scroll keys (⇧↓⇧↑) as well, from here, with x shown during a run; below, the help names them."""
SCROLL = {"detail_down", "detail_up"}
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
                                 (width < READY_FROM and action in ("run_ready_parallel", "sync", "screen")) or
                                 (width < SCROLL_FROM and running and action == "sync") or
                                 (running and action == "screen") or
                                 (width < READY_FROM and running and action in RUNNING_HIDDEN) or
                                 (width < SCROLL_FROM and action in SCROLL))
        if action in SHORT or hide:
            binding = replace(binding, description=SHORT.get(action, binding.description),
                              show=binding.show and not hide)
        shown[key] = active._replace(binding=binding)
    return shown


class KeyFooter(Footer):
    """Textual's Footer, with its keys in its first frame and recomposed once for however many binding
    changes come before its next frame.

    Footer composes no key until the first bindings signal and then recomposes (all its keys unmounted and
    mounted again) a frame after each one; at start-up the focus, the first views and the layout sent seven,
    so the keys came six frames after the first paint and flickered on the way. This one composes the
    screen's keys as they are when it is mounted, and one pending recompose reads the bindings as they are
    when it runs, which covers every signal before it.
    """

    _recompose_pending = False
    _shown: tuple = ()
    """The bindings the keys were composed from: a signal that changes none of them (a focus move within the
    table, a refresh of the views) recomposes nothing."""

    def __init__(self, *children, **kwargs) -> None:
        super().__init__(*children, **kwargs)
        self.set_reactive(Footer._bindings_ready, True)

    def _key_set(self) -> tuple:
        """What Footer.compose draws from: the shown bindings and the palette's."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple((key, b.binding, b.enabled, b.tooltip) for key, b in self.screen.active_bindings.items()
                     if b.binding.show or key == palette)

    def compose(self):
        self._shown = self._key_set()
        for widget in super().compose():
            # each key's compact watcher would add the class after it was styled, and style it once more
            if isinstance(widget, FooterKey):
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or self._recompose_pending:
            return
        if self.is_attached and screen is self.screen:
            self._recompose_pending = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_pending = False
        if self.is_attached and self._key_set() != self._shown:
            await self.recompose()


def give_footer(screen) -> None:
    """A modal drawn over the main screen would show the main screen's keys in that screen's footer: give it a
    footer of its own (docked over the one below), unless it composed one."""
    ours = type(screen).__module__.startswith("optseq.")  # Textual's command palette keeps its own look
    if ours and isinstance(screen, ModalScreen) and screen.is_attached and not screen.query(Footer):
        screen.mount(KeyFooter(compact=True))
        screen.call_after_refresh(screen.refresh_bindings)  # a footer draws once told the bindings changed
