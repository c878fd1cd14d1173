"""Branch levers and compares in the console (issue 30), on tests/code_repo.py's repository: the levers measured
through the real CLI, git moved as the user moves it (a merge in the working tree, a commit on a branch), and
the console followed at 80×24, asserted on its widgets: an adopted branch not merged yet, merged, a branch
that moved since its run, and a compare from another shell."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest

from optseq.console.tui.app import make_app
from tests.code_repo import GIT_ENV, CodeRepo, make_repo
from tests.conftest import OPTSEQ
from tests.console.test_app import SIZE, cell, run, select_lever
from tests.console.test_app import _steady_env  # noqa: F401  the autouse fixture, here too

ROUNDS = 2400
"""Pauses of 0.05 s before a wait is called a hang (a count, never a budget): the console asks git every 3 s,
off its UI thread, on a machine the suite shares."""

pytestmark = pytest.mark.slow  # each test measures a branch through the real CLI: seconds of bench launches


def cli(repo: CodeRepo, db, *args: str, timeout: int = 300) -> str:
    proc = subprocess.run([*OPTSEQ, *args, "--plan", str(repo.root / "optseq.toml"), "--db", str(db)],
                          cwd=repo.root, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in ("OPTSEQ_PLAN", "OPTSEQ_DB")}, **GIT_ENV}


async def until(pilot, predicate, what: str) -> None:
    for _ in range(ROUNDS):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never came: {what}")


def detail(app) -> str:
    return app.main.query_one("#detail-view").plain


def graph_line(app, lever: str) -> str:
    graph = app.main.query_one("#graph-view")
    lines = []

    def walk(node) -> None:
        for child in node.children:
            lines.append(str(child.label))
            walk(child)

    walk(graph.root)
    return next(line for line in lines if line.split(" [")[0].split(" → ")[-1] == lever)


def test_an_adopted_branch_is_unmerged_until_the_user_merges_it(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "state"
    cli(repo, db, "--run", "fast")
    cli(repo, db, "--run", "same")  # rejected: the merge is the one thing left to do
    fast = repo.commit("fast")[:7]

    async def go():
        app = make_app(repo.root / "optseq.toml", db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "unmerged", "fast unmerged")
            # not shown as done: its state, what to do, and the lever that waits on it
            assert cell(app, "fast", "why") == f"merge fast ({fast})"
            assert cell(app, "later", "state") == "blocked"
            assert cell(app, "later", "why") == "gate: fast unmerged"
            assert app.main.query_one("#status").text == \
                f"next: nothing to run · fast: merge fast ({fast}) to put it in the stack"
            text = detail(app)
            assert "fast  fast path  [infra]  adopted, unmerged\n" in text
            assert f"code: branch fast against HEAD, measured at {fast}\n" \
                   f"  adopted — merge fast ({fast}) to put it in the stack\n" in text
            assert f"      measured fast at {fast}: adopted, not merged yet\n" in text
            await pilot.press("2")
            await until(pilot, lambda: app.main.query("#graph-view"), "the graph")
            assert app.main.query_one("#graph-view").marks["fast"] == "unmerged"  # a word: NO_COLOR loses nothing
            assert graph_line(app, "fast").startswith("fast [unmerged] adopted ")
            assert graph_line(app, "fast").endswith(f" · merge fast ({fast})")
            await pilot.press("question_mark")
            await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help")
            assert "*unmerged*: a branch lever (`candidate_ref`) adopted but not merged yet" in \
                app.screen.query_one("Markdown").source
            await pilot.press("escape", "1")

            # the user merges in the working tree, with notes.md changed and not committed: the console sees it
            repo.git("merge", "--no-ff", "--quiet", "-m", "merge fast", "fast")
            merge = repo.commit("HEAD")[:7]
            await until(pilot, lambda: cell(app, "fast", "state") == "adopted", "fast merged")
            assert cell(app, "fast", "why") == f"in code since {merge}"
            await until(pilot, lambda: cell(app, "later", "state") == "ready", "later's gate open")
            assert cell(app, "later", "why") == "r: run it"
            assert app.main.query_one("#status").text == "next: later (n runs it)"
            text = detail(app)
            assert f"  in the code since {merge}\n" in text
            assert f"      measured fast at {fast}: merged, in the code since {merge}\n" in text
            await pilot.press("2")
            assert app.main.query_one("#graph-view").marks["fast"] == "decided"
            assert graph_line(app, "fast").endswith(f" · in code since {merge}")
        assert "work in progress, not committed" in (repo.root / "notes.md").read_text(encoding="utf-8")

    run(go())


def test_a_branch_that_moved_since_its_run_is_stale_with_the_reason(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "state"
    cli(repo, db, "--run", "same")
    was = repo.commit("same")[:7]

    async def go():
        app = make_app(repo.root / "optseq.toml", db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "same")
            assert cell(app, "same", "state") == "rejected"
            now = repo.commit_on("same", "extra.txt", "more\n", "more on same")[:7]
            await until(pilot, lambda: cell(app, "same", "state") == "stale reject", "same stale")
            assert cell(app, "same", "stale") == "!"
            assert cell(app, "same", "why") == "r: same moved, re-run"
            reason = f"same moved 1 commit since run 1 ({was} → {now})"
            assert f"stale\n  {reason}\n" in detail(app)
            assert f"      measured same at {was}: same moved 1 commit since\n" in detail(app)
            await pilot.press("2")
            await until(pilot, lambda: app.main.query("#graph-view"), "the graph")
            assert app.main.query_one("#graph-view").marks["same"] == "stale"
            assert graph_line(app, "same").endswith(" · same moved 1 commit")

    run(go())


def test_r_on_a_branch_merged_before_it_ran_says_why_in_one_toast_that_fits(tmp_path):
    # issue 38, point 8: the lever is not ready nor next; its r is refused in one line, whole on screen
    from optseq.state.store.store import Store

    repo = make_repo(tmp_path)
    repo.git("merge", "--quiet", "--no-edit", "fast")
    said = f"fast cannot run: merged before it ran: candidate fast ({repo.commit('fast')[:7]}) is in main's history"
    db = tmp_path / "state"
    Store.open(db, mode="write").close()

    def screen_rows(app) -> list[str]:
        return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]

    async def go():
        app = make_app(repo.root / "optseq.toml", db)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "blocked", "fast not ready")
            assert app.main.query_one("#status").text == "next: same (n runs it)"
            await select_lever(pilot, "fast")
            await pilot.press("r")
            await until(pilot, lambda: app._notifications, "the toast")
            assert [n.message for n in app._notifications] == [said]
            await until(pilot, lambda: app.screen.query("Toast"), "the toast on screen")
            await pilot.pause()
            (toast,) = app.screen.query("Toast")
            # whole: every row of its text in the toast, the toast above the views (a toast clipped under the
            # rack's height, or a message wrapped past it, loses its end)
            assert toast.region.height >= toast.get_content_height(toast.size, toast.size, toast.size.width)
            assert toast.region.bottom <= app.main.query_one("#views").region.y, toast.region
            rows = " ".join(row[toast.region.x:toast.region.right].strip("▌ ")  # its left border
                            for row in screen_rows(app)[toast.region.y:toast.region.bottom])
            assert " ".join(rows.split()) == said, rows
            assert not app.main.panel.running
        assert json.loads(cli(repo, db, "runs", "--json"))["runs"] == []  # nothing ran, nothing recorded

    run(go())


def test_a_compare_from_another_shell_shows_in_the_run_tab(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "state"
    fast, main = repo.commit("fast")[:7], repo.commit("main")[:7]

    async def go():
        app = make_app(repo.root / "optseq.toml", db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            compares = app.main.query_one("#run-compares")
            assert compares.has_class("-none") and not compares.display  # no compare yet: no block
            proc = await asyncio.create_subprocess_exec(
                *OPTSEQ, "compare", "main", "fast", "--plan", str(repo.root / "optseq.toml"), "--db", str(db),
                cwd=repo.root, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await proc.communicate()
            assert proc.returncode == 0, out.decode()[-2000:] + err.decode()[-2000:]
            await until(pilot, lambda: compares.compares and compares.compares[0].run.status == "succeeded",
                        "the compare, ended")
            assert compares.display
            line = compares.lines()[0]
            assert line.startswith(f"compare 1  fast {fast} vs main {main}  not slower 1.")
            assert "  tol 5%  " in line
            # at 80 columns the time is left out whole, the rest stays
            shown = compares.lines(SIZE[0] - 2)[0]
            assert shown == line.rpartition("  ")[0] and len(shown) <= SIZE[0] - 2

    run(go())


def test_a_console_opened_after_a_compare_shows_its_verdict(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "state"
    cli(repo, db, "compare", "main", "fast")

    async def go():
        app = make_app(repo.root / "optseq.toml", db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause()
            assert app.main.query_one("#run-compares").lines()[0].split("  ")[2].startswith("not slower")

    run(go())
