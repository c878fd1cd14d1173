"""The console (Pilot) on a merged history of two writers with a conflict: the status line names it, the lever's
detail says both decisions, their writers and rationales (issue 39, point 1's console)."""
from __future__ import annotations

import asyncio
import json

import pytest

from optseq.console.tui.app import make_app
from tests.console.test_app import select_lever
from tests.state.sync.syncing import Team


@pytest.fixture(autouse=True)
def _steady_env(monkeypatch):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


def test_the_console_shows_a_merged_history_with_a_conflict(tmp_path):
    team = Team(tmp_path)
    for store in ("A", "B"):
        team.optseq(store, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x in A's numbers")
    team.optseq("B", "decide", "option_b", "reject", "--why", "B measured no gain")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    wa, wb = team.writer("A"), team.writer("B")
    (c,) = json.loads(team.optseq("B", "status", "--json").stdout)["conflicts"]
    holds, other = c["holds"]["writer"], c["other"]["writer"]  # the later by its writer's clock, in every store
    assert {holds, other} == {wa, wb}

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            line = app.main.query_one("#status").text
            assert line.startswith(f"conflict: option_b ({holds} vs {other})"), line
            await select_lever(pilot, "option_b")
            detail = " ".join(app.main.query_one("#detail-view").plain.split())
            assert "option_b was decided concurrently" in detail, detail
            for said in (wa, wb, "5.3x in A's numbers", "B measured no gain"):
                assert said in detail, (said, detail)

    asyncio.run(go())
