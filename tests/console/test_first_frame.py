"""What the console's first frame lays out (`make paint-bench` times it): the views behind the tabs wait until
after it, the Run tab's panel included, and a run started at once still finds its panel whole."""
from __future__ import annotations

from pathlib import Path

from textual.app import App

from optseq.console.tui import app as console_app
from optseq.console.tui.app import OptseqApp
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import SIZE, run, until


class Watched(OptseqApp):
    """The console, noting what its screen holds when its first frame is written to the terminal (and, with
    `start_at_first`, starting a run of that lever right then: a key typed ahead of the next frame)."""

    CSS_PATH = str(Path(console_app.__file__).parent / OptseqApp.CSS_PATH)
    first: dict | None = None
    start_at_first: str | None = None
    status_calls: list[bool] = []

    def _display(self, screen, renderable) -> None:
        if self.first is None and screen is getattr(self, "_main", None):
            self.first = {"nodes": [type(n).__name__ for n in screen.walk_children(with_self=True)],
                          "run parts": len(screen.panel.children), "levers": screen.query_one("#levers").row_count,
                          "status calls": list(self.status_calls)}
            if self.start_at_first:
                screen.panel.start(self.seq, self.start_at_first)
        App._display(self, screen, renderable)


def test_the_run_panel_is_built_after_the_first_frame(db):
    async def go():
        app = Watched(Sequencer.open(DEFAULT_PLAN, db), None)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.first is not None, what="the first frame")
            assert app.first["levers"] > 0  # the table is in it, filled
            assert app.first["run parts"] == 0, app.first  # the Run tab's dozen widgets are not
            assert "ProgressBar" not in app.first["nodes"] and "CutLog" not in app.first["nodes"]
            await until(pilot, lambda: app.main.panel.query("#run-title"), what="the run panel's parts")
            title = app.main.panel.query_one("#run-title").render()
            assert "r runs the selected lever" in str(title)  # drawn from the store as it was before the parts came
            await pilot.press("3")
            assert app.main.query_one("#views").active == "run"

    run(go())


def test_a_run_started_before_the_panel_is_built_finds_it_whole(db):
    async def go():
        app = Watched(Sequencer.open(DEFAULT_PLAN, db), None)
        app.start_at_first = "no_such_lever"  # refused by the run itself, which says so as any run's end is said
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.first is not None, what="the first frame")
            assert app.first["run parts"] == 0
            panel = app.main.panel
            said = lambda: [n.message for n in app._notifications if n.message.startswith("no_such_lever:")]
            await until(pilot, lambda: said() and not panel.running, what="the run's end")
            assert "unknown lever" in said()[0], said()
            assert len(panel.query("#run-title")) == len(panel.query("#run-progress")) == 1  # built once

    run(go())


def test_the_first_frame_asks_status_once_without_the_hours_and_the_hours_come_once_after(db):
    # the hours-saved calculus runs after the first frame, and the first resize (the same layout the first
    # refresh drew) redraws nothing: it ran a whole status, hours included, before the first frame
    async def go():
        seq = Sequencer.open(DEFAULT_PLAN, db)
        calls: list[bool] = []
        status = seq.views.status

        def counted(hours: bool = True):
            calls.append(hours)
            return status(hours)

        seq.views.status = counted  # type: ignore[method-assign]  # the real status, counted
        app = Watched(seq, None)
        app.status_calls = calls
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.first is not None, what="the first frame")
            assert app.first["status calls"] == [False], app.first["status calls"]
            await until(pilot, lambda: len(calls) >= 2, what="the hours after the first frame")
            await pilot.pause()
            assert calls == [False, True], calls

    run(go())
