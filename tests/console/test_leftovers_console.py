"""The console runs a lever in a worker thread of its own process, under the launch's shim as `--run` does: a
daemon the lever leaves, double-forked with its environment wiped, is stopped when its launch ends and said in
the run's log there (tests/state/runners/test_wiped_daemons.py)."""
from __future__ import annotations

import sys

import pytest

from optseq.console.tui.app import make_app
from tests.console.test_app import SIZE, _steady_env, run, until  # noqa: F401
from tests.state.runners.test_wiped_daemons import WIPES, alive, kill_left, left, plan  # noqa: F401


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER and /proc are Linux's")
def test_the_console_stops_what_a_launch_left_and_says_it(tmp_path, db, kill_left):
    folder = tmp_path / "daemons"
    folder.mkdir()
    kill_left(folder)
    path = plan(tmp_path, {"leaky": [sys.executable, str(WIPES), str(folder)]})

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("r")
            panel = app.main.panel
            await until(pilot, lambda: not panel.running, what="the run to finish")
            await pilot.pause()
            pids = left(folder)
            assert len(pids) >= 2 and [pid for pid in pids if alive(pid)] == [], pids
            said = [line for line in panel.query_one("#run-log").lines if "left by launch" in line]
            assert len(said) == sorted(pids.values()).count("daemon"), said
            assert all(any(f"pid {pid} (" in line for line in said) for pid in pids), (pids, said)
            run_record = app.seq.views.history()["runs"][0]
            assert sorted(p["pid"] for p in run_record["leftovers"]) == sorted(pids)

    run(go())
