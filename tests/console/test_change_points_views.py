"""Change points where people see them: `optseq runs LEVER` and the console's history plot, on stores built
through the real API (tests/state/stepped_history.py: real lever runs, one or more commits before each)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.console.tui.app import make_app
from tests.console.test_app import SIZE, select_lever, until
from tests.state.stepped_history import build

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("change_points_views")]

STEPPED = [1.5] * 4 + [1.25] * 4
"""A 17% drop at run 5."""
FLAT = [1.5] * 7


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    root = tmp_path_factory.mktemp("stepped")
    plan, commits = build(root / "repo", root / "db", STEPPED, between=2)
    return plan, root / "db", commits


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    root = tmp_path_factory.mktemp("flat")
    plan, _ = build(root / "repo", root / "db", FLAT)
    return plan, root / "db"


def _runs_cli(plan: Path, db: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_PLAN", "OPTSEQ_DB")}
    proc = subprocess.run([sys.executable, "-m", "optseq.console.cli", "runs", *(args or ("lever",)), "--plan",
                           str(plan), "--db", str(db)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_runs_lever_names_the_change_and_the_commits_around_it(stepped):
    plan, db, commits = stepped
    out = _runs_cli(plan, db)
    lines = [line for line in out.splitlines() if line.startswith("change at")]
    old, new = commits[3][:7], commits[4][:7]
    assert len(lines) == 1, out
    assert re.fullmatch(rf"change at run 5: 1\.(49|50|51)× → 1\.2[456]×, between commits {old}\.\.{new}, "
                        rf"2 commits: git log {old}\.\.{new}", lines[0]), lines[0]
    # under the runs table, above the decisions
    order = out.splitlines()
    assert order.index(lines[0]) == next(i for i, line in enumerate(order) if line.startswith("decision")) - 1


def test_runs_json_carries_the_change_points_runs_lever_prints(stepped):
    plan, db, commits = stepped
    printed = next(line for line in _runs_cli(plan, db).splitlines() if line.startswith("change at"))
    for args in (("--json",), ("lever", "--json")):  # every lever's, or the one asked for
        found = json.loads(_runs_cli(plan, db, *args))
        assert len(found["runs"]) == len(STEPPED) and [c["text"] for c in found["changes"]] == [printed], found["changes"]
        change = found["changes"][0]
        assert (change["lever"], change["previous"], change["run"], change["commits_between"]) == ("lever", 4, 5, 2)
        assert change["old"]["commit"] == commits[3] and change["new"]["commit"] == commits[4]
        assert change["before"] > change["after"]


def test_runs_lever_without_a_step_names_none(flat):
    out = _runs_cli(*flat)
    assert "change at" not in out and out.count("adopt") >= len(FLAT)


async def _plotted(plan: Path, db: Path):
    app = make_app(plan, db)
    async with app.run_test(size=SIZE) as pilot:
        await select_lever(pilot, "lever")
        await pilot.press("4")  # the History tab
        plot = app.main.query_one("#history-view")
        await until(pilot, lambda: plot.settled, what="the change points")
        await pilot.pause()
        return list(plot.changes), list(plot.captions), plot.render()


def test_the_history_plot_shows_the_change_and_its_commits(stepped):
    plan, db, commits = stepped
    changes, captions, drawn = asyncio.run(_plotted(plan, db))
    assert [(c.previous, c.run) for c in changes] == [(4, 5)]
    assert changes[0].before == pytest.approx(1.5, rel=0.03) and changes[0].after == pytest.approx(1.25, rel=0.03)
    old, new = commits[3][:7], commits[4][:7]
    assert captions == [f"change at run 5: {changes[0].before:.2f}× → {changes[0].after:.2f}×, commits {old}..{new}"]
    # the caption is drawn under the plot, and the change's label on it
    text = "\n".join(part.plain for part in drawn.renderables)
    assert text.splitlines()[-1] == captions[0]
    assert f"{changes[0].before:.2f}→{changes[0].after:.2f}×" in text


def test_the_history_plot_without_a_step_shows_none(flat):
    changes, captions, drawn = asyncio.run(_plotted(*flat))
    assert changes == [] and captions == []
    assert "change at" not in drawn.plain
