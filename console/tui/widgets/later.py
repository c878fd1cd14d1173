"""A view mounted a frame after the first paint: textual's Lazy, minus its error when the app quit first."""
from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget


class Later(Widget):
    """Textual's Lazy mounts its widget after the first refresh; a quit typed ahead of that refresh (keys a terminal
    held while optseq started) closes the screen first, and Lazy's mount then raised a MountError traceback on the
    way out. This one mounts only into a parent still attached.

    It takes what makes the widget, not the widget: the widget is built when it is mounted, after the first
    frame too (the first Tree of a run costs more to build than the frame spends on some of what it shows)."""

    DEFAULT_CSS = """
    Later {
        display: none;
    }
    """

    def __init__(self, make: Callable[[], Widget]) -> None:
        super().__init__()
        self._make = make

    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        parent = self.parent
        if not isinstance(parent, Widget):
            return

        async def mount() -> None:
            if not (parent.is_attached and self.is_attached):
                return
            await parent.mount(self._make(), after=self)
            await self.remove()

        self.call_after_refresh(mount)
