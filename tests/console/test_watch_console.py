"""An eroded gain in the console (issue 31): a lever adopted at 1.5×, its gain lost (the stand-in's $GAIN), a watch
from the console's `w` key, and the table, the detail pane and the graph saying `eroded` with the figures, the
lever measured on top of it stale; a watch whose gains hold says so. Through the real CLI and the app at 80×24."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from optseq.console.tui.app import make_app
from tests.conftest import OPTSEQ
from tests.console.test_app import SIZE, cell, run, select_lever
from tests.console.test_app import _steady_env  # noqa: F401  the autouse fixture, here too
from tests.console.test_branch_console import detail, graph_line, until
from tests.state.lifecycle.test_watch import PLAN

pytestmark = pytest.mark.slow  # lever runs through the real CLI, and a watch from the console


@pytest.fixture
def adopted(tmp_path):
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(PLAN, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("GAIN", "OPTSEQ_PLAN", "OPTSEQ_DB")}
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), "--run", "ready", "--json"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert [r["decision"] for r in json.loads(proc.stdout)["runs"]] == ["adopt", "adopt"], proc.stderr
    return plan, db


def test_w_watches_and_an_eroded_gain_is_marked_in_the_table_detail_and_graph(adopted, monkeypatch):
    plan, db = adopted
    monkeypatch.setenv("GAIN", "1.0")  # the runs the console launches inherit it: the gain is gone

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            # the key pressed once the table shows the adopted lever: on a loaded machine the first screen comes late
            await until(pilot, lambda: cell(app, "fast", "state").startswith("adopted"), "the table's adopted fast")
            await pilot.press("w")
            panel = app.main.panel
            await until(pilot, lambda: panel.running, "the watch to start")
            await until(pilot, lambda: not panel.running, "the watch to land")
            await until(pilot, lambda: cell(app, "fast", "state") == "eroded", "fast marked eroded")
            # the table shows each run as it lands: on_top's last, after the group's end
            await until(pilot, lambda: cell(app, "on_top", "state").startswith("stale"), "on_top stale")
            assert cell(app, "fast", "why").startswith("d: gain eroded")
            await select_lever(pilot, "fast")
            await pilot.press("1")
            await pilot.pause()
            shown = detail(app)
            assert "watch: eroded: 1.0" in shown and "against 1.5" in shown and "when adopted at run 1" in shown
            await pilot.press("2")
            await until(pilot, lambda: "[eroded]" in graph_line(app, "fast"), "the graph's eroded mark")

    run(go())


def test_a_watch_whose_gains_hold_leaves_them_adopted(adopted, monkeypatch):
    plan, db = adopted
    monkeypatch.delenv("GAIN", raising=False)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            # the key pressed once the table shows the adopted lever: on a loaded machine the first screen comes late
            await until(pilot, lambda: cell(app, "fast", "state").startswith("adopted"), "the table's adopted fast")
            await pilot.press("w")
            panel = app.main.panel
            await until(pilot, lambda: panel.running, "the watch to start")
            await until(pilot, lambda: not panel.running, "the watch to land")
            await select_lever(pilot, "fast")
            await pilot.press("1")
            await until(pilot, lambda: "watch: holds at run 3" in detail(app), "the watch's verdict")
            await until(pilot, lambda: cell(app, "on_top", "state") == "adopted", "on_top's watch landed")
            assert cell(app, "fast", "state") == "adopted"

    run(go())
