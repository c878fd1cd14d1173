"""What the console's first frame lays out (`make paint-bench` times it): the table, the status line and the keys;
the tab bar with its views and the side pane wait until after it, the Run tab's panel included, and a run started at
once, or keys typed at once, still find them whole."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from textual import events
from textual.app import App

from optseq.console.tui import app as console_app
from optseq.console.tui.app import OptseqApp
from optseq.console.tui.screens.main import MainScreen
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import SIZE, run, tiny_plan, until
from tests.console.test_import_set import _env, _make_store


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
                          "ids": {n.id for n in screen.walk_children()} - {None},
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


FIRST_FRAME = {"MainScreen", "Horizontal", "Vertical", "LeverTable", "StatusLine", "KeyFooter", "FooterKey"}
"""What the first frame is made of: the table, the status line, the footer's keys and their containers (the minimal
app's header, table and footer, paint_bench.py's MINIMAL_APP)."""


def test_the_first_frame_is_the_table_the_status_line_and_the_keys(db):
    # the tab bar (TabbedContent: its tabs, underline, switcher and panes), the detail, the run panel and the side
    # pane's views were 25 of the first frame's 43 widgets; they are mounted a frame after it, the same as before
    async def go():
        app = Watched(Sequencer.open(DEFAULT_PLAN, db), None)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.first is not None, what="the first frame")
            nodes = app.first["nodes"]
            assert set(nodes) == FIRST_FRAME, sorted(set(nodes) - FIRST_FRAME)
            assert len(nodes) == 7 + nodes.count("FooterKey"), nodes  # screen, body, column, table, status, side
            assert {"levers", "status", "side"} <= app.first["ids"] and "views" not in app.first["ids"]
            assert app.first["levers"] == 9
            await until(pilot, lambda: app.main.query("#graph-view"), what="the views behind the tabs")
            column = app.main.query_one("#main-column")
            assert [w.id for w in column.children] == ["levers", "status", "views"]  # the tabs under the status line
            assert [p.id for p in app.main.query("TabPane")] == ["detail", "graph", "run", "history", "screen"]
            assert app.main.query_one("#views").active == "detail"
            assert app.main.query_one("#detail-view").plain.startswith("julia_port")  # the selected lever's detail
            assert app.focused is app.main.table

    run(go())


FIRST_FRAME_SCRIPT = """
import asyncio, json, sys
from optseq.console.tui.app import OptseqApp
from optseq.state.api import Sequencer
from textual.app import App

SEEN = {{}}


class Noted(OptseqApp):
    CSS_PATH = {css!r}

    def _display(self, screen, renderable):
        if "first" not in SEEN and screen is getattr(self, "_main", None):
            SEEN["first"] = sorted(sys.modules)
        App._display(self, screen, renderable)


async def go():
    app = Noted(Sequencer.open({plan!r}, {db!r}), None)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(2000):  # pauses before a wait is called a hang: a count, never a time budget
            if app.main.query("#graph-view") and app.main.query("#history-view"):
                break
            await pilot.pause(0.01)
        SEEN["settled"] = sorted(sys.modules)
    print(json.dumps(SEEN))


asyncio.run(go())
"""

TABS_MODULES = ("optseq.console.tui.screens.tabs", "textual.widgets._tabbed_content", "textual.widgets._tabs",
                "optseq.console.tui.widgets.lever_detail", "optseq.console.tui.widgets.run_panel",
                "optseq.console.tui.widgets.dep_graph", "optseq.console.tui.widgets.history_plot")
"""What only the tab bar, its views and the side pane need: loaded with them, a frame after the first paint."""


def test_the_tabs_modules_are_loaded_after_the_first_frame(db):
    _make_store(db)
    code = FIRST_FRAME_SCRIPT.format(css=str(Path(console_app.__file__).parent / OptseqApp.CSS_PATH),
                                     plan=str(DEFAULT_PLAN), db=str(db))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2], env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [m for m in TABS_MODULES if m in seen["first"]] == []
    assert [m for m in TABS_MODULES if m not in seen["settled"]] == []


class HeldTabs(MainScreen):
    """The main screen whose tab bar waits for the test (`tabs_now`) instead of following the first frame: keys
    typed meanwhile are typed before the tabs are there, whatever the machine's speed."""

    async def open_tabs(self) -> None:
        pass

    async def tabs_now(self) -> None:
        await super().open_tabs()


class HeldTabsApp(OptseqApp):
    CSS_PATH = Watched.CSS_PATH

    def get_default_screen(self) -> MainScreen:
        self._main = HeldTabs(self.seq, self.export_dir, parallel=self.parallel)
        return self._main


def test_keys_typed_before_the_tabs_wait_for_them_in_order(db, tmp_path, monkeypatch):
    # down, r, 3 typed before the tab bar is there: once it is, slow (the row down took the cursor to) runs in the
    # Run tab's panel, and the Run tab shows. In another order r would run fast, or 3 find no tab to switch to
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # the run stays at its first pair until cancelled
    plan = tiny_plan(tmp_path)

    async def go():
        app = HeldTabsApp(Sequencer.open(plan, db), None)
        async with app.run_test(size=SIZE, tabs=False) as pilot:  # the tabs come when the test says
            main = app.main
            await pilot.press("down", "r", "3")
            assert main.tabs is None and not main.query("#views")
            assert [key.key for key in app._held_keys] == ["down", "r", "3"]
            assert main.table.selected == "fast" and main.made_panel is None  # nothing of them happened yet
            main.call_later(main.tabs_now)
            await until(pilot, lambda: main.made_panel is not None and main.made_panel.running, what="the run")
            assert main.made_panel.lever == "slow" and main.table.selected == "slow"
            await until(pilot, lambda: main.query_one("#views").active == "run", what="the Run tab")
            assert app._held_keys is None
            await pilot.press("x")  # a key typed now goes straight through
            await until(pilot, lambda: not main.panel.running, what="the cancel")

    run(go())
