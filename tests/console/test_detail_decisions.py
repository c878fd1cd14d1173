"""The detail pane's decisions: the views hand them decoded once, each with its marks (view_types.MarkedDecision), and
the detail reads them by name; what it says of a reversal and of the plan's prior is what it always said."""
from __future__ import annotations

import re
import subprocess

from optseq.console.tui.app import make_app
from optseq.state.sequencer import Sequencer
from optseq.state.view_types import MarkedDecision
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import SIZE, run, select_lever


def decide(env: dict, *args: str) -> None:
    subprocess.run([*OPTSEQ, "decide", *args], env=env, check=True, capture_output=True, text=True)


def test_a_reversed_decision_is_listed_superseded_and_a_prior_from_the_plan(db, cli_env, monkeypatch):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    decide(cli_env, "amp", "defer", "--why", "wait for model size")
    decide(cli_env, "amp", "reject", "--why", "no gain\x1b]0;title\x07 here")  # an escape the detail drops

    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        marked = seq.views.lever_history("amp")["decisions"]
    assert [type(d) for d in marked] == [MarkedDecision, MarkedDecision]
    first, second = marked
    assert (first.outcome, first.superseded, second.outcome, second.superseded) == ("defer", True, "reject", False)
    assert first.superseded_by == f"decision {second.id}: amp decided reject" and second.superseded_by is None
    assert second.supersedes == first.id and first.auto is False

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "amp")
            detail = app.main.query_one("#detail-view").plain
            listed = detail[detail.index("\ndecisions\n"):].splitlines()[2:]
            assert re.fullmatch(r"  reject  manual  \d{4}-\d\d-\d\d \d\d:\d\d", listed[0]), listed
            assert listed[1] == "    why: no gain here"
            assert re.fullmatch(r"  defer  manual  \d{4}-\d\d-\d\d \d\d:\d\d \(superseded\)", listed[2]), listed
            assert listed[3] == "    why: wait for model size"
            await select_lever(pilot, "cython_bot")
            detail = app.main.query_one("#detail-view").plain
            assert detail.endswith("\ndecisions\n  adopt 2.55× (from the plan): ~2.55× on opponent_act\n")

    run(go())
