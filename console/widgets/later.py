"""A view mounted a frame after the first paint: textual's Lazy, minus its error when the app quit first."""
from __future__ import annotations

from textual.lazy import Lazy
from textual.widget import Widget


class Later(Lazy):
    """Lazy mounts its widget after the first refresh; a quit typed ahead of that refresh (keys a terminal held
    while optseq started) closes the screen first, and Lazy's mount then raised a MountError traceback on the
    way out. This one mounts only into a parent still attached."""

    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        parent = self.parent
        if parent is None:
            return

        async def mount() -> None:
            if not (parent.is_attached and self.is_attached):
                return
            await parent.mount(self._replace_widget, after=self)
            await self.remove()

        self.call_after_refresh(mount)
