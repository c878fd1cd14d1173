"""Pilot tests of the console: every action driven by keys, asserted on widgets and on the store afterwards."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optseq.console.tui.app import make_app
from optseq.console.tui.dialogs.confirm import ConfirmDialog
from optseq.state.runners.groups import group_alive
from optseq.state.sequencer import Sequencer
from optseq.state.view_types import as_json
from tests.conftest import DEFAULT_PLAN, OPTSEQ

TINY_LEVER = Path(__file__).with_name("tiny_lever.py")
SIZE = (80, 24)
"""Every Pilot test runs at the smallest size the console promises to work at."""


@pytest.fixture(autouse=True)
def _steady_env(monkeypatch):
    # A developer's OPTSEQ_PLAN / OPTSEQ_DB must not leak into the stores these tests create,
    # and Textual's animations make intermediate frames depend on timing: turn them off so every
    # assertion sees the settled screen.
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


def tiny_plan(tmp_path: Path) -> Path:
    """Three ready speedup levers whose command is tiny_lever.py: fast, slow (cancellable, and stale once
    fast is decided again) and chatty."""
    def lever(lever_id: str, *args: str, extra: str = "") -> str:
        argv = json.dumps(["python", str(TINY_LEVER), *args])
        return f"""
[[levers]]
id = "{lever_id}"
title = "**{lever_id.title()}** lever"
kind = "speedup"
plan_doc = "docs/{lever_id}.md"
run = {argv}
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
{extra}
"""
    text = ('[plan]\ntitle = "Tiny plan"\nas_of = 2026-11-01\nlang = "en"\n'
            + lever("fast", "--ratio", "1.5")
            + lever("slow", "--pause", "0.5", extra='remeasure_when = ["fast"]')
            + lever("chatty", "--log-lines", "3000"))
    path = tmp_path / "tiny.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run(coro):
    return asyncio.run(coro)


CEILING_S = 120.0
"""How long `until` waits before it calls a wait a hang: only a guard, never a budget."""


async def until(pilot, predicate, timeout: float = CEILING_S, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.05)


def table(app):
    return app.main.query_one("#levers")


def cell(app, lever: str, column: str) -> str:
    return table(app).cell_text(lever, column)


async def select_lever(pilot, lever: str) -> None:
    t = table(pilot.app)
    t.focus()
    steps = t._ids.index(lever) - t._ids.index(t.selected)
    await pilot.press(*(["down"] * steps if steps > 0 else ["up"] * -steps))
    await pilot.pause()
    assert t.selected == lever


def stored(plan: Path, db: Path) -> tuple[dict, dict]:
    """(status as `optseq status --json` prints it, history) read back from disk by a fresh Sequencer, after the
    console closed."""
    with Sequencer.open(plan, db, mode="read") as seq:
        return as_json(seq.views.status()), seq.views.history()


def view(status: dict, lever: str) -> dict:
    return next(v for v in status["levers"] if v["id"] == lever)


# -- the main screen -------------------------------------------------------------------------------

def test_main_screen_shows_the_seed_plan(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert table(app)._ids == ["julia_port", "port", "cython_bot", "option_b", "model_size", "amp",
                                       "compile", "tensorrt", "option_a"]
            assert cell(app, "julia_port", "state") == "ready"
            assert cell(app, "cython_bot", "state") == "adopted"
            assert cell(app, "cython_bot", "estimate") == "2.55× (plan)"
            assert cell(app, "julia_port", "plan") == "julia_port_evaluation.md"
            # the decision lever has nothing to run: next says so, with what only the user can do
            assert app.main.query_one("#status").text == \
                "next: nothing to run · press c on julia_port: record torch_jl c4"
            assert len(app.main.query_one("#status").text) <= SIZE[0] - 2  # whole at 80 columns (padding 1 each side)
            detail = app.main.query_one("#detail-view").plain
            assert "Torch.jl  pass    pass    pass    pending pending" in detail
            # Flux failed as a whole in the plan: dashes, not pending beside a FAIL
            flux = next(line for line in detail.splitlines() if line.strip().startswith("Flux"))
            assert "pending" not in flux and "FAIL as a whole" in flux
            await select_lever(pilot, "model_size")
            assert "rule: min:exploitability, 3 blocks a pass, up to 12, margin 5%\n" in \
                app.main.query_one("#detail-view").plain
            await select_lever(pilot, "tensorrt")
            detail = app.main.query_one("#detail-view").plain
            # an A/B bench counts launches: repeats = 7, max_repeats = 21 asks min(7, 21 // 6) = 3 pairs a launch
            # what is left after the first look, never launches the pairs leave no room for (`up to 18 launches`)
            assert ("rule: infer_samples_per_s ≥ 1.2×, 6 launches of up to 3 pairs before it can decide; if "
                    "inconclusive, up to 3 more pairs in up to 3 more launches\n") in detail
            assert "why blocked" in detail and "fact eval_dense is not set true" in detail
            await pilot.press("2")
            graph = app.main.query_one("#graph-view")
            assert app.main.query_one("#views").active == "graph"
            assert graph.marks["julia_port"] == "ready" and graph.marks["cython_bot"] == "decided"
            assert graph.marks["option_b"] == "blocked"
            labels = [str(n.label) for n in graph.root.children]
            assert any(label.startswith("julia_port [ready]") for label in labels)
            option_b = next(n for n in graph.root.children if n.data == "julia_port").children
            assert [str(n.label).split(" [")[0] for n in option_b] == ["GO → port", "NO-GO → option_b"]

    run(go())


def test_record_c4_fail_goes_no_go_and_option_b_waits_for_its_plan(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("c")
            dialog = app.screen
            assert type(dialog).__name__ == "CriterionDialog"
            # the first pending cell is pre-selected; the outcome must be chosen by hand
            assert dialog.query_one("#candidate").value == "torch_jl"
            assert dialog.query_one("#criterion").value == "c4"
            await pilot.press("ctrl+s")
            assert str(dialog.query_one("#form-error").render()) == "choose pass or fail"
            await pilot.press("enter", "f", "enter", "tab", *"0.8x", "enter")
            await pilot.pause()
            assert app.screen is app.main
            assert cell(app, "julia_port", "state") == "decided NO-GO"
            assert cell(app, "port", "state") == "closed"
            assert cell(app, "option_b", "state") == "unplanned"
            assert app.main.query_one("#status").text == \
                "next: nothing to run · press p on option_b: write its plan"
            detail = app.main.query_one("#detail-view").plain  # julia_port, still selected
            assert "    Torch.jl c4: 0.8x\n" in detail  # what the result rests on
            assert "    Torch.jl c1, c2, c3: recorded in the plan\n" in detail
            assert "    Flux: Flux FAIL (docs/research/julia_port_evaluation.md)\n" in detail
            await select_lever(pilot, "option_b")
            assert "plan not written — p on option_b" in app.main.query_one("#detail-view").plain
            assert app.main.query_one("#graph-view").marks["option_b"] == "blocked"
        status, history = stored(DEFAULT_PLAN, db)
        assert view(status, "julia_port")["outcome"] == "NO-GO"
        assert view(status, "option_b")["state"] == "unplanned"
        crit = history["criteria"][-1]
        assert (crit["candidate"], crit["criterion"], crit["outcome"], crit["evidence"]) == ("torch_jl", "c4", "fail",
                                                                                             "0.8x")

    run(go())


def test_mark_plan_written_makes_option_b_next(db, tmp_path, monkeypatch):
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    monkeypatch.chdir(tmp_path)  # the suggested relative path is looked for from here (and the plan's folder)
    doc = tmp_path / "docs" / "plans" / "option_b.md"

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "option_b")
            await pilot.press("p")
            dialog = app.screen
            assert dialog.query_one("#path").value == "docs/plans/option_b.md"
            await pilot.press("enter")  # no such doc yet: the console offers to create it, and Back leaves it
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the create question")
            assert "docs/plans/option_b.md does not exist yet" in str(app.screen.query_one("#question").render())
            await pilot.press("n")
            await until(pilot, lambda: app.screen is app.main, what="back to the table")
            assert cell(app, "option_b", "state") == "unplanned" and not doc.exists()
            await pilot.press("p")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the create question")
            await pilot.press("y")  # created from the template, then marked
            await until(pilot, lambda: cell(app, "option_b", "state") == "ready", what="option_b ready")
            assert doc.read_text(encoding="utf-8").startswith("# **Option B** (per-worker interleaved traversal): plan")
            assert "## What it changes" in doc.read_text(encoding="utf-8")
            assert app.screen is app.main
            assert cell(app, "option_b", "state") == "ready"
            assert cell(app, "option_b", "plan") == "option_b.md"
            assert app.main.query_one("#status").text == "next: option_b (n runs it)"
        status, _ = stored(DEFAULT_PLAN, db)
        assert view(status, "option_b")["plan_doc"] == "docs/plans/option_b.md"
        assert status["next"] == "option_b"

    run(go())


def test_set_fact_flips_eval_dense(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f")
            assert app.screen.query_one("#fact").value == "eval_dense"
            assert app.screen.query_one("#value").value == "true"  # the opposite of the plan's false
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert app.screen is app.main
            await select_lever(pilot, "tensorrt")
            assert "fact eval_dense" not in app.main.query_one("#detail-view").plain
        status, _ = stored(DEFAULT_PLAN, db)
        assert status["facts"] == {"eval_dense": True}

    run(go())


def test_manual_decision_needs_a_rationale(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "amp")
            await pilot.press("d")
            confirm = app.screen  # amp is blocked: deciding it skips its gates, so the console asks first
            assert type(confirm).__name__ == "ConfirmDialog"
            assert str(confirm.query_one("#question").render()) == \
                "amp is blocked: model_size is not decided yet (blocked); needs a decision. Decide it by hand anyway?"
            await pilot.press("y")
            await pilot.pause()
            dialog = app.screen
            assert type(dialog).__name__ == "DecideDialog"
            await pilot.press("enter", "d", "enter")  # outcome: defer (type-to-search)
            assert dialog.query_one("#outcome").value == "defer"
            await pilot.press("ctrl+s")
            assert app.screen is dialog
            assert str(dialog.query_one("#form-error").render()) == "a manual decision needs a rationale"
            await pilot.press("tab", *"wait for model size", "enter")
            await pilot.pause()
            assert app.screen is app.main
            assert cell(app, "amp", "state") == "deferred"
            detail = app.main.query_one("#detail-view").plain
            assert "defer  manual" in detail and "why: wait for model size" in detail
        status, history = stored(DEFAULT_PLAN, db)
        decision = history["decisions"][-1]
        assert (decision["lever"], decision["outcome"], decision["auto"], decision["why"]) == (
            "amp", "defer", False, "wait for model size")
        assert view(status, "amp")["state"] == "deferred"

    run(go())


def test_refused_action_says_why_and_writes_nothing(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "amp")
            await pilot.press("c")  # amp has no criteria
            assert app.screen is app.main
            await pilot.press("r")  # amp is blocked
            await pilot.pause()
            messages = [n.message for n in app._notifications]
            assert any("only decision levers have criteria" in m for m in messages)
            assert any(m.startswith("amp is blocked: model_size is not decided yet") for m in messages)
            assert not app.main.panel.running
        _, history = stored(DEFAULT_PLAN, db)
        assert history["runs"] == [] and history["criteria"] == []

    run(go())


def test_export_writes_the_file_and_previews_it(db, tmp_path):
    (tmp_path / "out").mkdir()

    async def go():
        app = make_app(DEFAULT_PLAN, db, export_dir=tmp_path / "out")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            assert app.screen.query_one("#path").value == str(tmp_path / "out" / "optimization-sequencing.md")
            await pilot.press("enter")  # written in a worker, then previewed
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")
            preview = app.screen
            written = (tmp_path / "out" / "optimization-sequencing.md").read_text(encoding="utf-8")
            # the doc is drawn with the preview's first paint: no worker, no loading cover to wait out
            assert preview.markdown == written and preview.query_one("#export-doc").content.markup == written
            assert not preview.workers and not preview.query("LoadingIndicator")
            assert written.startswith("# Optimization Sequencing")
            await pilot.press("escape")
            assert app.screen is app.main
        text = (tmp_path / "out" / "optimization-sequencing.md").read_text(encoding="utf-8")
        assert text.startswith("# Optimization Sequencing") and "julia_port" not in text.split("\n")[0]

    run(go())


def test_help_lists_every_key(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("question_mark")
            assert type(app.screen).__name__ == "HelpScreen"
            source = app.screen.query_one("Markdown").source
            for row in ("| r | Run | run the selected lever |", "| x | Cancel run |", "| c | Criterion |",
                        "| d | Decide | decide the selected lever by hand (rationale required) |",
                        "| ?, f1 | Help |", "| q | Quit |", "| ctrl+p | command palette |"):
                assert row in source
            await pilot.press("escape")
            assert app.screen is app.main

    run(go())


def test_command_palette_offers_the_actions(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            titles = [c.title for c in app.get_system_commands(app.main)]
            for title in ("Run", "Run next", "Criterion", "Plan written", "Fact", "Decide", "Export", "Help",
                          "Quit"):
                assert title in titles
            assert "Cancel run" not in titles  # nothing is running
            await pilot.press("ctrl+p")
            await pilot.press(*"Fact")
            # the palette searches in the background: wait for its hit, not for a guessed delay
            await until(pilot, lambda: _palette_hits(app), what="the palette's hits")
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "FactDialog", what="the fact dialog")

    run(go())


def _palette_hits(app) -> int:
    from textual.widgets import OptionList

    lists = app.screen.query(OptionList)
    return sum(o.option_count for o in lists) if type(app.screen).__name__ == "CommandPalette" else 0


def test_a_record_from_a_shell_shows_up_in_the_open_console(db, cli_env):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert not app.seq.readonly
            out = subprocess.run([*OPTSEQ, "record", "julia_port", "torch_jl", "c4", "fail"], env=cli_env,
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr  # the console holds no lock between its writes
            await until(pilot, lambda: cell(app, "julia_port", "state") == "decided NO-GO", what="the record")
            assert app.main.query_one("#status").text.startswith("next: nothing to run · press p on option_b")
            # and the console still writes: its next write catches up with the shell's first
            await select_lever(pilot, "option_b")
            app.seq.actions.write_plan("option_b", "docs/plans/option_b.md")
            assert app.seq.machine.state("option_b") == "ready"

    run(go())


def test_a_read_only_console_keeps_its_writes_off(db):
    Sequencer.open(DEFAULT_PLAN, db, mode="write").close()

    async def go():
        app = make_app(DEFAULT_PLAN, db, mode="read")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.seq.readonly
            line = app.main.query_one("#status").text
            assert line.endswith(f"read-only: {db} cannot be written from here")
            for action in ("run_selected", "record_criterion", "set_fact", "decide", "mark_plan"):
                assert app.main.check_action(action, ()) is None
            assert app.main.check_action("export", ()) is True
            titles = [c.title for c in app.get_system_commands(app.main)]
            assert "Criterion" not in titles and "Export" in titles
            await pilot.press("c", "f", "d")
            assert app.screen is app.main
            # another process's writes show up: a read-only console follows the store
            with Sequencer.open(DEFAULT_PLAN, db, mode="write") as writer:
                writer.actions.set_fact("eval_dense", True)
            await until(pilot, lambda: app.seq.views.status().facts["eval_dense"], what="the reload")

    run(go())


# -- runs ---------------------------------------------------------------------------------------------

def test_run_selected_streams_then_decides(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("r")
            panel = app.main.panel
            assert app.main.query_one("#views").active == "run"
            await until(pilot, lambda: not panel.running, what="the run to finish")
            await pilot.pause()
            title = str(panel.query_one("#run-title").render())
            assert title.startswith("run #1 succeeded: fast: adopt"), title
            assert panel.has_class("-ok")
            log = panel.query_one("#run-log")
            assert "tiny lever log line 0" in log.lines and any(l.startswith("[env] device=tiny-device")
                                                                 for l in log.lines)
            # lines wider than the log are cut at its edge: no horizontal scrollbar (a lone thumb at 16 colours)
            assert max(len(line) for line in log.lines) > SIZE[0] and not log.show_horizontal_scrollbar
            # 6 launches (the fewest that can decide) of 2 pairs each (max_repeats 12 // 6)
            assert str(panel.query_one("#run-samples").render()).startswith("samples: 24 (12 pairs)")
            assert "items_per_s 1.5" in str(panel.query_one("#run-estimate").render())
            assert panel.query_one("#run-progress").percentage == 1.0
            assert cell(app, "fast", "state") == "adopted"
            assert cell(app, "fast", "estimate").startswith("1.5")
            assert "[" in cell(app, "fast", "estimate")
            assert app.main.query_one("#history-view").points[0][0] == 1
        status, history = stored(plan, db)
        assert view(status, "fast")["state"] == "adopted"
        assert [r["status"] for r in history["runs"]] == ["succeeded"]
        (record,) = history["runs"]
        stats = record["summary"]["stats"]
        # the sign test counted launches, each the median of its pairs: all 6 above 1.2×, p = 1/64
        assert (stats["replicate"], stats["launches"], stats["n"], len(stats["units"])) == ("launch", 6, 12, 6)
        assert stats["p_value"] == pytest.approx(1 / 64)
        assert record["passes"] == 6 and [c["asked"] for c in record["pass_counts"]] == [2] * 6

    run(go())


def test_run_next_and_history_plot(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(2):
                await pilot.press("n")
                await until(pilot, lambda: not app.main.panel.running, what="the run to finish")
                await pilot.pause()
            # fast (adopted) is no longer ready, so the second `next` ran slow
            assert [r["lever"] for r in app.seq.views.history()["runs"]] == ["fast", "slow"]
            await select_lever(pilot, "fast")
            await pilot.press("r")
            await until(pilot, lambda: not app.main.panel.running, what="the re-run")
            await pilot.pause()
            # fast decided again after slow was measured: slow's number is stale
            assert cell(app, "slow", "state") == "stale adopt" and cell(app, "slow", "stale") == "!"
            assert app.main.query_one("#graph-view").marks["slow"] == "stale"
            await select_lever(pilot, "slow")
            assert "stale\n  fast decided adopt after slow was measured" in app.main.query_one("#detail-view").plain
            await select_lever(pilot, "fast")
            await pilot.press("4")
            plot = app.main.query_one("#history-view")
            assert plot.lever == "fast" and [p[0] for p in plot.points] == [1, 3]
            assert all(1.4 < p[1] < 1.6 and p[2] <= p[1] <= p[3] for p in plot.points)

    run(go())


def test_ui_stays_responsive_and_cancel_kills_the_group(tmp_path, db, monkeypatch):
    plan = tiny_plan(tmp_path)
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # the run stays at pair 1 until cancelled

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "slow")
            await pilot.press("r")
            panel = app.main.panel
            await until(pilot, lambda: "pair 1" in str(panel.query_one("#run-progress-msg").render()),
                        what="the first pair")
            # keys work while the lever runs: move to another lever and read its detail
            await pilot.press("up", "1")
            assert app.main.query_one("#detail-view").plain.startswith("fast")
            assert cell(app, "slow", "state") == "running"
            assert app.main.query_one("#status").text == "running: slow"
            await pilot.press("x")
            await until(pilot, lambda: not panel.running, what="the cancel")
            await pilot.pause()
            assert str(panel.query_one("#run-title").render()).startswith("run #1 cancelled")
            assert panel.has_class("-failed")
            assert cell(app, "slow", "state") == "ready"
        _, history = stored(plan, db)
        (record,) = history["runs"]
        assert record["status"] == "cancelled" and not group_alive(record["pgid"])

    run(go())


def test_log_stays_bounded_under_a_flood(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "chatty")
            await pilot.press("r")
            await until(pilot, lambda: not app.main.panel.running, what="the chatty run")
            await pilot.pause()
            log = app.main.panel.query_one("#run-log")
            assert 0 < log.line_count <= 500
            assert "tiny lever log line 2999" in log.lines

    run(go())


def test_quit_during_a_run_asks_then_cancels(tmp_path, db, monkeypatch):
    plan = tiny_plan(tmp_path)
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # still running when q is pressed

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "slow")
            await pilot.press("r")
            await until(pilot, lambda: app.seq.views.history()["runs"] and app.seq.views.history()["runs"][0].get("pgid"),
                        what="the child to start")
            await pilot.press("q")
            await until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog", what="the question")
            await pilot.press("n")
            await pilot.pause()
            assert app.screen is app.main and app.main.panel.running
            await pilot.press("q")
            await until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog", what="the question")
            await pilot.press("y")
            await until(pilot, lambda: app.return_code is not None, what="the exit")
        assert app.return_code == 0
        _, history = stored(plan, db)
        (record,) = history["runs"]
        assert record["status"] == "cancelled" and not group_alive(record["pgid"])

    run(go())


VOLATILE = {"id", "seq", "at", "started", "ended", "elapsed_s", "elapsed_at_pass", "pid", "child_pid", "pgid", "log",
            "samples_file"}
"""Fields that differ between any two runs: record ids, times, process ids and per-store paths."""


MEASURED_COSTS = {"launch_s", "pair_s"}
"""A run's variance split records what its launches and pairs took in seconds: times, which differ too."""


def _comparable(record: dict) -> dict:
    kept = {key: value for key, value in record.items() if key not in VOLATILE}
    split = (kept.get("summary") or {}).get("split") if isinstance(kept.get("summary"), dict) else None
    if isinstance(split, dict):
        kept["summary"] = {**kept["summary"], "split": {k: v for k, v in split.items() if k not in MEASURED_COSTS}}
    # whether the machine was busy while a run went is the machine's, not the run's: a noise line may come and go
    stats = (kept.get("summary") or {}).get("stats") if isinstance(kept.get("summary"), dict) else None
    noise = ("noise", "noise_said")  # the line and its said for the export, the load figure in both
    if isinstance(stats, dict) and "noise" in stats:
        kept["summary"] = {**kept["summary"], "stats": {k: v for k, v in stats.items() if k not in noise}}
    if isinstance(kept.get("stats"), dict):  # a decision carries its run's stats, noise line and all
        kept["stats"] = {k: v for k, v in kept["stats"].items() if k not in noise}
    if isinstance(kept.get("warnings"), list):
        kept["warnings"] = [w for w in kept["warnings"] if not str(w).startswith("noisy:")]
    return kept


def test_tui_and_headless_runs_leave_identical_records(tmp_path):
    plan = tiny_plan(tmp_path)
    tui_db, cli_db = tmp_path / "tui", tmp_path / "cli"

    async def go():
        app = make_app(plan, tui_db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("r")
            await until(pilot, lambda: not app.main.panel.running, what="the TUI run")

    run(go())
    env = dict(os.environ)
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(cli_db), "--run", "fast"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    _, tui = stored(plan, tui_db)
    _, cli = stored(plan, cli_db)
    for table_name in ("runs", "decisions", "criteria", "events"):
        assert [_comparable(r) for r in tui[table_name]] == [_comparable(r) for r in cli[table_name]], table_name
    assert tui["runs"] and tui["decisions"]
    tui_samples = Path(tui["runs"][0]["samples_file"]).read_text()
    cli_samples = Path(cli["runs"][0]["samples_file"]).read_text()
    assert tui_samples == cli_samples


# -- the entry point -------------------------------------------------------------------------------

def test_without_a_terminal_it_says_so_in_one_line(cli_env):
    proc = subprocess.run(OPTSEQ, env=cli_env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "TTY" in lines[0] and "--run" in lines[0] and "optseq status" in lines[0]
    assert proc.stdout == ""


def test_the_console_never_imports_torch(db):
    code = (
        "import asyncio, sys\n"
        "from optseq.console.tui.app import make_app\n"
        f"app = make_app({str(DEFAULT_PLAN)!r}, {str(db)!r})\n"
        "async def go():\n"
        "    async with app.run_test(size=(80, 24)) as pilot:\n"
        "        await pilot.press('2', '3', '4', 'question_mark')\n"
        "asyncio.run(go())\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' or m.startswith('optseq.engine'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == ""


def test_closing_under_a_run_still_ends_it(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "slow")
            await pilot.press("r")
            await until(pilot, lambda: app.seq.views.history()["runs"] and app.seq.views.history()["runs"][0].get("pgid"),
                        what="the child to start")
            app.exit()  # not the quit key: no question, as when the terminal goes away

    run(go())
    _, history = stored(plan, db)
    (record,) = history["runs"]
    assert record["status"] == "cancelled" and not group_alive(record["pgid"])


@pytest.mark.parametrize("stats, prior, shown", [
    ({"estimate": 1.507, "ci_low": 1.5, "ci_high": 1.52}, None, "1.51× [1.50,1.52]"),
    ({"estimate": 87.61, "ci_low": 86.2, "ci_high": 88.16}, None, "87.6× [86.2,88.2]"),  # fits the column
    ({"estimate": 0.71, "ci_low": None, "ci_high": None}, None, "0.71×"),
    (None, 2.55, "2.55× (plan)"),
    ({"estimate": 149.87, "ci_low": 120.7, "ci_high": 187.1, "bench_size": "ci"}, 2.55, "150× at CI size"),
    ({"estimate": float("nan")}, None, "-"),
])
def test_estimate_text_fits_the_table(stats, prior, shown):
    from optseq.console.words.figures import estimate_text
    from optseq.console.tui.widgets.lever_table import COLUMNS
    from optseq.state.record_types import stats_from

    assert estimate_text(stats_from(stats) if stats else None, prior) == shown
    assert len(shown) <= dict((k, w) for k, _, w in COLUMNS)["estimate"]
