"""The console's screen (s): the ready levers that compose on the stack decided together by a two-level design, the
same `optseq --run screen` as the CLI's (state/runs/screen_run.py), asked first (its levers, design and what it
may spend, and the levers it leaves out), then run on a thread worker in the Screen tab."""
from __future__ import annotations

from rich.markup import escape

from optseq.state.errors import InputError


class Screening:
    """Mixed into MainScreen, which gives it `seq`, `panel` (the lever run's), `notify` and the views."""

    _screen_view = None

    def make_screen_panel(self):
        """The Screen tab's panel, made when the tab mounts (a frame after the first paint), kept by reference: the
        app stops its screen even after the screen is gone."""
        from optseq.console.tui.widgets.screen_panel import ScreenPanel  # with the plots: not before the first paint

        self._screen_view = ScreenPanel(id="screen-view")
        return self._screen_view

    def screen_panel(self):
        """The Screen tab's panel once mounted, else None."""
        return self._screen_view if self._screen_view is not None and self._screen_view.is_attached else None

    @property
    def screen_running(self) -> bool:
        panel = self.screen_panel()
        return panel is not None and panel.running

    def action_screen(self) -> None:
        panel = self.screen_panel()
        if self.panel.running or (panel is not None and panel.running):
            self.notify(f"{self.panel.lever or 'a screen'} is running; cancel it first (x)", severity="warning")
            return
        if panel is None:  # the tab mounts a frame after the first paint
            self.notify("the Screen tab is still opening; press s again", severity="warning")
            return
        from optseq.state.runs.screen_run import prepare

        try:
            screen = prepare(self.seq.run_host, [], None)
        except InputError as exc:
            self.notify(str(exc), severity="error", timeout=8, markup=False)
            return
        from optseq.console.tui.dialogs.confirm import ConfirmDialog

        left = "".join(f"\n{line}" for line in screen.screened.left_out)
        question = (f"Screen {', '.join(screen.screened.ids)} together: {screen.design.text()}; {screen.asks()}."
                    f"{left}\nRun it?")

        def answered(yes: bool | None) -> None:
            if yes:
                panel.start(self.seq, screen)
                self.action_view("screen")
                self.refresh_bindings()

        self.app.push_screen(ConfirmDialog(escape(question), "Screen", "Back"), answered)

    def cancel_screen(self) -> bool:
        panel = self.screen_panel()
        return panel is not None and panel.cancel()

    def on_screen_panel_ended(self, message) -> None:
        if message.report is None:
            self.notify(f"screen: could not run: {message.error}", severity="error", timeout=10, markup=False)
        else:
            self.notify(f"screen run {message.report.run_id} {message.report.status}: {message.report.message}",
                        severity="information" if message.report.status == "succeeded" else "warning",
                        timeout=10, markup=False)
        self.refresh_view()
