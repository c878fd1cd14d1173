"""The Textual app and `make_app`, the one factory the CLI and the tests both use."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
import os
import signal
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from optseq.console.tui.css_cache import CachedStylesheet, cache_file
from optseq.console.tui.screens.keys import ACTIONS, VIEWS
from optseq.console.tui.screens.main import MainScreen
from optseq.console.words.figures import plain_title
from optseq.state.api import Sequencer

if TYPE_CHECKING:
    from textual.message import Message
    from textual.pilot import Pilot

    from optseq.console.tui.widgets.run_panel import RunPanel
    from optseq.console.tui.widgets.screen_panel import ScreenPanel

STOP_TIMEOUT_S = 20.0
"""How long closing the app waits for a cancelled run to end before it closes the store anyway."""
TAKE_OVER_S = 2.0
"""How often a console read-only for an unwritable store directory checks whether it may write now."""
HANGUP_CHECK_S = 0.5
"""How often the console asks whether its terminal is still there (see `_watch_terminal`)."""
HANGUP_EXIT = 129
"""128 + SIGHUP, as a shell reports a process ended by a hang-up."""
TERM_EXIT = 143
"""128 + SIGTERM: the console was told to end (a kill, a service stopped) and cancelled its run first."""


VIEW_HELP = {"detail": "the selected lever in full", "graph": "dependency graph of the levers",
             "run": "the live run", "history": "estimates of the selected lever over its runs",
             "screen": "the screen under way or the newest one: design, progress, effects, interaction plots"}


class OptseqApp(App):
    """Owns the Sequencer for its lifetime: the writer lock is held while the console is open."""

    CSS_PATH = "app.tcss"
    TITLE = "optseq"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", show=False, priority=True)]

    def __init__(self, seq: Sequencer, export_dir: Path | None, parallel: int = 1,
                 plan_path: Path | str | None = None, mode: str = "auto") -> None:
        super().__init__()
        # the parse of the stylesheets comes from the last run's when the text and the theme are the same
        variables = self.stylesheet._variables
        self.stylesheet = CachedStylesheet(variables=variables, path=cache_file(variables))
        # 16 colours fold accent, warning and error into one bright red: app.tcss re-tones under this class
        self.set_class(self.console.color_system == "standard", "-ansi16")
        self.seq = seq
        self.export_dir = export_dir
        self.parallel = parallel if parallel > 1 else 2
        """How many levers R measures at once."""
        self._reopen = (plan_path, mode) if plan_path is not None and mode == "auto" else None
        """What re-opens the store writable once its directory may be written (asked read-only: never)."""
        self._held_keys: list[events.Key] | None = []
        """Keys typed before the main screen's tabs are mounted (a frame after its first paint), in order; None
        once they are there (`release_keys`)."""

    async def on_event(self, event: events.Event) -> None:
        # a key waits for the tab bar and the views it may switch to or start a run in (MainScreen.open_tabs), and
        # every key after it too, so that `r` then `j` still runs the lever `r` was typed on
        if self._held_keys is not None and isinstance(event, events.Key) and not event.is_forwarded:
            self._held_keys.append(event)
            return
        await super().on_event(event)

    def release_keys(self) -> None:
        """The main screen's tabs are there: the keys held until now go on, in the order they were typed."""
        if self._held_keys is not None:
            self.call_later(self._release_keys)

    async def _release_keys(self) -> None:
        # on the app's own task, as a key is handled: a key typed meanwhile waits in its queue behind these
        held, self._held_keys = self._held_keys or [], None
        for key in held:
            await super().on_event(key)

    def on_mount(self) -> None:
        if self.seq.readonly and self._reopen is not None:
            self._take_over_timer = self.set_interval(TAKE_OVER_S, self._take_over)
        self._watch_terminal()

    def _watch_terminal(self) -> None:
        """End the console when its terminal goes away (an SSH connection dropped, a tmux session killed).

        Only the session leader gets SIGHUP: under `make` or a shell script the console is not one, and a
        hung-up terminal then reads as endless EOF, which Textual's input thread takes for a pipe and polls
        at full speed with nobody to see it. So a terminal that stops being one ends the console too.
        """
        stdin = sys.__stdin__
        if self.is_headless or stdin is None or not os.isatty(fd := stdin.fileno()):
            return  # Pilot, or textual-serve's pipe: no terminal to lose
        self._terminal = fd
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self._hung_up)
        # left to its default, SIGTERM ended the console at once: the run went on unrecorded (an arm outlives the
        # driver that dies with optseq). Its terminal is still there: the console closes as a quit does, and
        # on_unmount cancels the run and lets it record its end
        loop.add_signal_handler(signal.SIGTERM, lambda: self.exit(return_code=TERM_EXIT))

        def check() -> None:
            if not os.isatty(fd):
                self._hung_up()

        self.set_interval(HANGUP_CHECK_S, check)

    def _hung_up(self) -> None:
        """End a run under way (its process group), let it record its end, close the store, and leave.

        Not through `exit`: Textual's shutdown writes to the terminal, and its writer thread died on the first
        write after the hang-up, so that shutdown waits forever on the dead thread's full queue."""
        main = getattr(self, "_main", None)
        if main is not None:
            if main.made_panel is not None:  # made with the tabs, a frame after the first paint
                main.made_panel.stop(STOP_TIMEOUT_S)
            if main.screening.view is not None:  # kept by reference: it may be detached by now
                main.screening.view.stop(STOP_TIMEOUT_S)
        self.seq.close()
        os._exit(HANGUP_EXIT)

    def panic(self, *renderables) -> None:
        # Textual's input thread panics on the EIO a hung-up terminal gives it: that is a hang-up, not a bug
        if getattr(self, "_terminal", None) is not None and not os.isatty(self._terminal):
            self._hung_up()
        super().panic(*renderables)

    def _take_over(self) -> None:
        """Read-only was a condition, not a choice: once the directory is writable, this console writes."""
        directory = self.seq.store.directory
        if self._reopen is None or not os.access(directory, os.W_OK | os.X_OK):
            return
        try:
            seq = Sequencer.open(self._reopen[0], directory, mode="write")
        except Exception:  # still not writable (a race, a full disk): the next tick tries again
            return
        self._take_over_timer.stop()
        old, self.seq = self.seq, seq
        main = self.main
        main.seq, main.holder = seq, None
        main.set_class(False, "-readonly")
        old.close()
        main.refresh_view()
        self.notify(f"{directory} can be written now: this console writes again")

    @asynccontextmanager
    async def run_test(self, *, headless: bool = True, size: tuple[int, int] | None = (80, 24),
                       tooltips: bool = False, notifications: bool = False,
                       message_hook: Callable[[Message], None] | None = None,
                       tabs: bool = True) -> AsyncGenerator[Pilot[None], None]:
        """Textual's, started once the main screen's tab bar is there too (`tabs`): as Textual's waits for the
        widgets a screen composes, this waits for those it mounts a frame after its first paint (open_tabs), so
        a test reads the detail at once as a user does (whose keys the app holds until then: on_event)."""
        async with super().run_test(headless=headless, size=size, tooltips=tooltips, notifications=notifications,
                                    message_hook=message_hook) as pilot:
            if tabs:
                await self.main.tabs_opened.wait()
                await pilot.pause()
            yield pilot

    def get_default_screen(self) -> Screen:
        self._main = MainScreen(self.seq, self.export_dir, parallel=self.parallel)
        return self._main

    @property
    def main(self) -> MainScreen:
        return self._main

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        main = self.main
        for binding in ACTIONS:
            if binding.action.startswith("app."):
                continue
            if main.check_action(binding.action, ()) is not True:
                continue  # a read-only console offers no write, an idle one no cancel
            keys = " or ".join(self.get_key_display(replace(binding, key=k.strip())) for k in binding.key.split(","))
            yield SystemCommand(binding.description, f"{binding.tooltip} ({keys})",
                                partial(main.run_action, binding.action))
        for number, view in enumerate(VIEWS, start=1):
            yield SystemCommand(f"View {view}", f"{VIEW_HELP[view]} ({number})", partial(main.action_view, view))
        for lever in self.seq.plan.levers:  # a lever by name: its row becomes the one actions apply to
            yield SystemCommand(f"Lever {lever.id}", plain_title(lever.title), partial(main.choose_lever, lever.id))
        yield SystemCommand("Quit", "quit optseq, asks first while a lever runs (q)", self.action_quit)
        yield from (c for c in super().get_system_commands(screen) if c.title not in ("Quit",))

    async def action_quit(self) -> None:
        # Textual awaits an action, a key's or the palette's, so its own is a coroutine and this one too
        screening = self.main.screen_panel()
        panel: RunPanel | ScreenPanel = self.main.panel
        if screening is not None and screening.running:
            panel = screening  # a screen holds its levers: nothing else runs beside it
        if not panel.running:
            self.exit(0)
            return
        from optseq.console.tui.dialogs.confirm import ConfirmDialog  # where a quit first asks: not before the first paint

        if isinstance(self.screen, ConfirmDialog):
            return  # already asking

        async def answered(quit_: bool | None) -> None:
            if not quit_:
                return
            panel.cancel()
            await panel.wait()  # the worker returns once the process group is gone
            self.exit(0)

        levers = sorted(panel.running_levers) or [getattr(panel, "lever", None) or "a screen"]
        what = f"{', '.join(levers)} {'is' if len(levers) == 1 else 'are'} running"
        self.push_screen(ConfirmDialog(f"{what}. Quit and cancel "
                                       f"(each run's whole process group or job)?", "Quit", "Stay"), answered)

    def on_unmount(self) -> None:
        # Closing under a live run (an error, a signal Textual turned into an exit): end the lever's
        # process group and let the run record its end before the store closes. The grace before
        # SIGKILL plus the output drain stay well inside this bound.
        main = getattr(self, "_main", None)
        if main is not None:
            if main.made_panel is not None:  # made with the tabs, a frame after the first paint
                main.made_panel.stop(STOP_TIMEOUT_S)
            if main.screening.view is not None:  # kept by reference: it may be detached by now
                main.screening.view.stop(STOP_TIMEOUT_S)
        self.seq.close()
        self.keep_css()  # what the views and dialogs opened since brought

    def keep_css(self) -> None:
        """Write the stylesheet cache if a source was parsed that it lacked: the main screen calls it once its
        widgets are styled, before the first frame (a console killed with its terminal, as the paint bench
        closes it, never reaches on_unmount and may be gone a moment after that frame)."""
        if isinstance(self.stylesheet, CachedStylesheet):  # (a CSS file watch makes a plain one)
            self.stylesheet.keep()


def make_app(plan_path: Path | str, db_dir: Path | str, *, mode: str = "auto",
             export_dir: Path | str | None = None, parallel: int = 1) -> OptseqApp:
    """Open the plan and the store (read-only when another optseq writes) and build the app.

    Raises the state layer's one-line errors (PlanError, StoreError) before any screen is drawn.
    Exports go to `export_dir` if given, else to `docs/` beside the state directory (report/target.py's
    default_target: `.optseq/` in a repo exports into its `docs/`, never the repo root unasked).
    """
    seq = Sequencer.open(plan_path, db_dir, mode=mode)
    return OptseqApp(seq, Path(export_dir) if export_dir is not None else None, parallel=parallel,
                     plan_path=plan_path, mode=mode)
