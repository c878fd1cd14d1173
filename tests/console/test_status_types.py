"""What status says is typed (state/view_types.py), and `optseq status --json` prints it as before: every key in its
place, nulls kept, a key left out only where status always left it out (a lever's `criteria` without criteria).
Scripts read these keys; the stores here are written by the real CLI (lever runs, decisions, a watch, criteria) and
by a screen's record, and the console shows what status says with a lever's or a user's escapes stripped."""
from __future__ import annotations

import json
import subprocess

import pytest

from optseq.console.tui.app import make_app
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import SIZE, run, select_lever
from tests.console.test_app import _steady_env  # noqa: F401  the autouse fixture, here too
from tests.console.test_screen_views import screened_plan
from tests.state.lifecycle.test_watch import PLAN as WATCH_PLAN
from tests.state.screen_records import write_screen

TOP = ["plan", "as_of", "store", "readonly", "next", "todo", "levers", "facts", "infra", "decision_points", "warnings",
       "testbed", "screen", "screen_claims"]
LEVER = ["id", "title", "kind", "state", "outcome", "stale", "stale_reason", "why_blocked", "plan_doc", "code",
         "requires", "decision", "warnings", "branch", "watch", "eroded", "unavailable", "remeasured", "last_run",
         "last_failure", "screen", "testbed", "elsewhere", "testbeds_shown", "testbed_note", "note"]
WATCH = ["run", "verdict", "estimate", "ci_low", "ci_high", "commit", "at"]
LAST_RUN = ["id", "status", "verdict", "started", "ended", "detail", "stats", "noise"]
POINT = ["id", "lever", "on", "text", "reopens", "fired"]
CANDIDATE = ["status", "results", "evidence"]
FACT = ["run", "main", "call", "interactions", "main_said", "main_text"]
INTERACTION = ["with", "effect", "run", "significant", "off", "on", "said", "text"]
CLAIM = ["levers", "run", "said", "text"]
UNSAFE = "\x1b]0;PWNED\x07"
"""A title change, as a user's path or a lever's text may carry it: never printed to the terminal raw."""


def optseq(env: dict, *args: str, code: int | None = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=900)
    assert code is None or proc.returncode == code, proc.stdout + proc.stderr
    return proc


def status_json(env: dict) -> dict:
    return json.loads(optseq(env, "status", "--json").stdout)


def test_status_json_of_the_default_plan_with_criteria_decisions_and_points(cli_env):
    optseq(cli_env, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "criterion 4 missed")
    optseq(cli_env, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    optseq(cli_env, "decide", "option_b", "adopt", "--why", "5.3x samples/s")
    status = status_json(cli_env)
    assert list(status) == TOP
    by_id = {v["id"]: v for v in status["levers"]}
    for view in status["levers"]:
        criteria = ["criteria"] if view["id"] == "julia_port" else []  # the one lever with criteria
        assert list(view) == LEVER + criteria + ["hours_saved"], view["id"]
    julia = by_id["julia_port"]
    assert all(list(entry) == CANDIDATE for entry in julia["criteria"].values())
    assert julia["criteria"]["torch_jl"]["evidence"]["c4"] == "criterion 4 missed"
    assert by_id["option_b"]["decision"]["why"] == "5.3x samples/s" and "doc_id" not in by_id["option_b"]["decision"]
    # nulls stay nulls: a lever with no branch, watch or run says so with a null, never by leaving the key out
    assert (by_id["option_b"]["branch"], by_id["option_b"]["watch"], by_id["option_b"]["last_run"]) == (None,) * 3
    assert [list(p) for p in status["decision_points"]] == [POINT] * len(status["decision_points"])
    assert {p["id"]: p["fired"] is not None for p in status["decision_points"]}["torch_jl_result"]
    assert status["screen"] is None and status["screen_claims"] == []


@pytest.mark.slow  # four lever runs and two watches through the real CLI
def test_status_json_of_runs_adopted_and_a_watch_that_found_a_gain_gone(tmp_path, cli_env):
    plan = tmp_path / "plan.toml"
    plan.write_text(WATCH_PLAN, encoding="utf-8")
    env = {k: v for k, v in cli_env.items() if k != "GAIN"} | {"OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "ready", "--json")
    optseq({**env, "GAIN": "1.0"}, "--run", "watch", "--json", code=None)  # its exit says a gain eroded
    status = status_json(env)
    assert list(status) == TOP
    fast, on_top = status["levers"]
    for view in (fast, on_top):
        assert list(view) == LEVER + ["hours_saved"]
        assert list(view["watch"]) == WATCH and list(view["last_run"]) == LAST_RUN
    assert fast["watch"]["verdict"] == "eroded" and fast["eroded"].startswith("eroded: ")
    assert fast["last_run"]["stats"] is not None and "ratios" not in fast["last_run"]["stats"]  # per-pair lists out
    assert fast["decision"]["auto"] is True and fast["unavailable"] is None
    assert on_top["state"] == "stale" and on_top["hours_saved"] is None


def test_status_json_of_a_screen_with_its_facts_and_the_plans_claims(tmp_path, cli_env, db):
    plan = screened_plan(tmp_path)
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    write_screen(plan, db)
    status = status_json(env)
    assert list(status) == TOP
    for view in status["levers"]:
        assert list(view) == LEVER + ["hours_saved"]
        assert list(view["screen"]) == FACT
        assert all(list(i) == INTERACTION for i in view["screen"]["interactions"])
    assert status["screen"]["id"] == 1 and [list(c) for c in status["screen_claims"]] == [CLAIM, CLAIM]


ESCAPED_PLAN = """[plan]
title = "A plan with an escape"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "fast"
title = "the \\u001b]0;PWNED\\u0007fast path"
kind = "speedup"
run = ["python", "bench.py"]
rule = { metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }
"""


def test_the_console_strips_escapes_from_what_status_says(tmp_path, cli_env, db):
    # a lever's title is the user's text, read from the plan as written; the table and the detail show it clean
    plan = tmp_path / "plan.toml"
    plan.write_text(ESCAPED_PLAN, encoding="utf-8")
    said = status_json(dict(cli_env, OPTSEQ_PLAN=str(plan)))
    assert said["levers"][0]["title"] == f"the {UNSAFE}fast path"  # status --json spells it as JSON does

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await select_lever(pilot, "fast")
            detail = app.main.query_one("#detail-view").plain
            title = app.main.query_one("#levers").cell_text("fast", "title")
            assert "the fast path" in detail and title == "the fast path"
            assert not any(c in detail + title for c in "\x1b\x07")
            shown = app.main.shown["fast"]  # what the console holds is still the typed view, made safe
            assert type(shown).__name__ == "LeverStatus" and shown.title == "the fast path"

    run(go())


def test_status_json_is_what_json_dumps_printed(cli_env):
    """The default plan's first status, as main's `json.dumps(status_dict, ensure_ascii=False, indent=2)` wrote
    it: two-space indents, non-ASCII as is, a trailing newline from print."""
    out = optseq(cli_env, "status", "--json").stdout
    assert out == json.dumps(json.loads(out), ensure_ascii=False, indent=2) + "\n"
    assert out.startswith('{\n  "plan": ') and '"hours_saved": ' in out
