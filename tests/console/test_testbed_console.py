"""The console names the testbed of each number once a store holds two (issue 39, point 2): the lever's detail says
where its standing numbers came from, a latest run on another testbed than the plan's says it decided nothing, and
each run line names its testbed; `w` on another testbed says why it watches nothing. Under Pilot, on a store two
OPTSEQ_TESTBEDs wrote through the real CLI."""
from __future__ import annotations

from pathlib import Path

from optseq.console.tui.app import make_app
from tests.console.test_app import SIZE, run, select_lever, until
from tests.console.test_runs_table import AB, lever, optseq, write_plan


def test_the_console_names_each_runs_testbed_and_a_run_that_decided_nothing(tmp_path, cli_env, monkeypatch):
    adopts = ["python", str(AB), "--ratio", "1.5"]
    plan = write_plan(tmp_path, '[testbed]\ndecides = "gpu-box"\n', lever("fast", adopts), lever("other", adopts))
    db = Path(cli_env["OPTSEQ_DB"])
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    optseq(dict(env, OPTSEQ_TESTBED="gpu-box"), "--run", "fast")
    optseq(dict(env, OPTSEQ_TESTBED="laptop"), "--run", "other")

    monkeypatch.setenv("OPTSEQ_TESTBED", "laptop")  # the console's own process: the laptop

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await select_lever(pilot, "fast")
            await until(pilot, lambda: "#1  adopt" in app.main.query_one("#detail-view").plain)
            detail = app.main.query_one("#detail-view").plain
            assert "testbed: measured on gpu-box\n" in detail
            assert next(l for l in detail.splitlines() if "#1  adopt" in l).endswith("  on gpu-box")
            await select_lever(pilot, "other")
            await until(pilot, lambda: "#2  adopt" in app.main.query_one("#detail-view").plain)
            detail = app.main.query_one("#detail-view").plain
            assert ("testbed: run 2 measured on laptop, not the plan's testbed gpu-box, so it decides nothing\n"
                    in detail), detail
            assert next(l for l in detail.splitlines() if "#2  adopt" in l).endswith("  on laptop")
            # `w` on the laptop: the gain adopted on the GPU box is not re-checked here, and the console says why
            await pilot.press("w")
            await until(pilot, lambda: app._notifications, what="a notification")
            assert [n.message for n in app._notifications] == [
                "watch: fast was adopted on gpu-box; this is laptop: its gain is re-checked only on gpu-box "
                "(OPTSEQ_TESTBED=gpu-box there)"]

    run(go())
