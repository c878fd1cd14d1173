"""The console's screen (s): the ready levers that compose on the stack decided together by a two-level design, the
same `optseq --run screen` as the CLI's (state/runs/screen_run.py), asked first (its levers, design and what it
may spend, and the levers it leaves out), then run on a thread worker in the Screen tab."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from optseq.console.tui.screens.host import ScreenHost
from optseq.state.api import InputError

if TYPE_CHECKING:
    from optseq.console.tui.widgets.screen_panel import ScreenPanel


class Screening:
    """The Screen tab's panel and the s key, for the screen it is given."""

    def __init__(self, host: ScreenHost) -> None:
        self.host = host
        self.view: ScreenPanel | None = None
        """The Screen tab's panel once made, kept by reference: the app stops its screen even after the screen is
        gone."""

    def make_panel(self) -> ScreenPanel:
        """The Screen tab's panel, made when the tab mounts (a frame after the first paint)."""
        from optseq.console.tui.widgets.screen_panel import ScreenPanel  # with the plots: not before the first paint

        self.view = ScreenPanel(lambda: self.host.seq, id="screen-view")
        return self.view

    def panel(self) -> ScreenPanel | None:
        """The Screen tab's panel once mounted, else None."""
        return self.view if self.view is not None and self.view.is_attached else None

    @property
    def running(self) -> bool:
        panel = self.panel()
        return panel is not None and panel.running

    def start(self) -> None:
        host, panel = self.host, self.panel()
        if host.panel.running or (panel is not None and panel.running):
            host.notify(f"{host.panel.lever or 'a screen'} is running; cancel it first (x)", severity="warning")
            return
        if panel is None:  # the tab mounts a frame after the first paint
            host.notify("the Screen tab is still opening; press s again", severity="warning")
            return
        from optseq.state.api import prepare_screen as prepare

        try:
            screen = prepare(host.seq.run_host, [], None)
        except InputError as exc:
            host.notify(str(exc), severity="error", timeout=8, markup=False)
            return
        from optseq.console.tui.dialogs.confirm import ConfirmDialog

        left = "".join(f"\n{line}" for line in screen.screened.left_out)
        question = (f"Screen {', '.join(screen.screened.ids)} together: {screen.design.text()}; {screen.asks()}."
                    f"{left}\nRun it?")

        def answered(yes: bool | None) -> None:
            if yes:
                panel.start(host.seq, screen)
                host.action_view("screen")
                host.refresh_bindings()

        host.app.push_screen(ConfirmDialog(escape(question), "Screen", "Back"), answered)

    def cancel(self) -> bool:
        panel = self.panel()
        return panel is not None and panel.cancel()

    def ended(self, message: ScreenPanel.Ended) -> None:
        host = self.host
        if message.report is None:
            host.notify(f"screen: could not run: {message.error}", severity="error", timeout=10, markup=False)
        else:
            host.notify(f"screen run {message.report.run_id} {message.report.status}: {message.report.message}",
                        severity="information" if message.report.status == "succeeded" else "warning",
                        timeout=10, markup=False)
        host.refresh_view()
