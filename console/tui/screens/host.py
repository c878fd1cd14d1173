"""What the main screen gives the objects that hold its concerns (following, forms, sync, screen, runs): each is
handed the screen as a `ScreenHost` and reaches nothing of it beyond these names, so the type checker holds every
concern to the screen's API instead of to whatever attribute another concern happened to set."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.notifications import SeverityLevel
    from textual.timer import Timer
    from textual.worker import Worker

    from optseq.console.tui.widgets.lever_table import LeverTable
    from optseq.console.tui.widgets.run_panel import RunPanel
    from optseq.console.tui.widgets.status_line import StatusLine
    from optseq.state.api import LeverStatus, Sequencer


class ScreenHost(Protocol):
    """The main screen, as its concerns see it."""

    seq: Sequencer
    """The plan and store the console shows; replaced when a read-only console takes over (app.py)."""
    export_dir: Path | None
    parallel: int
    """How many levers R measures at once."""

    @property
    def panel(self) -> RunPanel:
        """The Run tab's panel: a lever's run, or a parallel group's."""
        ...
    shown: dict[str, LeverStatus]
    """The lever views on screen now (state/view_types.py), by lever id (empty before the first refresh)."""

    @property
    def app(self) -> App[object]: ...

    @property
    def selected(self) -> str | None:
        """The table's cursor row: the lever actions apply to."""
        ...

    @property
    def table(self) -> LeverTable: ...

    @property
    def status_line(self) -> StatusLine: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def refresh_view(self, hours: bool = True) -> None: ...

    def refresh_bindings(self) -> None: ...

    def action_view(self, view: str) -> None: ...

    def plan_banner(self, error: str | None) -> None: ...

    def set_interval(self, interval: float, callback: Callable[[], object] | None = None) -> Timer: ...

    def run_worker(self, work: Callable[[], None], *, group: str = "default", exit_on_error: bool = True,
                   exclusive: bool = False, thread: bool = False) -> Worker[None]: ...
