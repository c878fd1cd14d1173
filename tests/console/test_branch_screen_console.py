"""The console's screen (s) over branch levers: the question says each design run launches the commit combining the
code of its branch levers that are on, the Screen tab shows each lever's call and the interaction the combined code
makes, and the user's files, HEAD, branches and .git/index are as they were. The CLI's screen of the same repository
(tests/state/code/test_branch_screen.py) checks the commits and worktrees; this checks the console drives the same
path and says it."""
from __future__ import annotations

import json
import subprocess

import pytest

from optseq.console.tui.app import make_app
from tests.conftest import OPTSEQ
from tests.console.test_app import SIZE, _steady_env, run, until  # noqa: F401
from tests.console.test_screen_console import ask_screen
from tests.state.code.test_branch_screen import make
from tests.state.code.trees import index_stat, touch_tracked

SCREEN_ENDS = 1800.0
"""How long `until` waits for the whole screen (design runs in four worktrees, then its confirmation): a guard
against a hang, never a budget; the test's verdict is what the tab says once it ends."""


@pytest.mark.slow  # a screen of three levers: every design run a process, in four worktrees
def test_s_screens_two_branch_levers_and_a_flag_in_their_combined_code_leaving_the_users_tree_alone(tmp_path,
                                                                                                 monkeypatch):
    repo = make(tmp_path)
    touch_tracked(repo.root / "bench.py")  # an index entry a porcelain read would refresh and write back
    before, index = repo.snapshot(), index_stat(repo.root)
    main = repo.commit("main")
    plan, db = repo.root / "optseq.toml", tmp_path / "db"
    monkeypatch.chdir(tmp_path)  # the console finds the code through its plan, not the directory it started in

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            question = " ".join((await ask_screen(pilot, app)).split())
            assert question.startswith("Screen alpha, beta, wide together: 2^3 full factorial"), question
            assert ("each run in a worktree of the commit combining the code of its branch levers that are on "
                    f"(alpha, beta) on HEAD ({main[:7]})") in question, question
            await pilot.press("y")
            panel = app.main.screen_panel()
            assert panel.running and app.main.query_one("#views").active == "screen"
            await until(pilot, lambda: not panel.running, timeout=SCREEN_ENDS, what="the screen to end")
            await pilot.pause()
            effects = {line.split()[0]: line.split()[1] for line in
                       str(panel.query_one("#screen-effects").render()).splitlines()}
            assert effects == {"alpha": "adopt", "beta": "adopt", "wide": "adopt"}, effects
            said = str(panel.query_one("#screen-said").render())
            assert said.startswith("alpha × beta: "), said  # beta gains only beside alpha's code
            plot, = panel.query("InteractionPlot")
            assert plot.pair == ("alpha", "beta")

    run(go())
    # the user's checkout as it was: the index's content, mtime and inode, then its files, HEAD, branches and stash
    assert index_stat(repo.root) == index and repo.snapshot() == before
    status = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), "status", "--json"], capture_output=True,
                            text=True, check=True)
    states = {v["id"]: v["state"] for v in json.loads(status.stdout)["levers"]}
    assert states == {"alpha": "adopted", "beta": "adopted", "wide": "adopted"}, states
