"""Pilot tests of what a newcomer reads first: the footer's keys, the why / next column, the palette, the widths."""
from __future__ import annotations

from pathlib import Path

from textual.widgets import Footer

from optseq.console.tui.app import make_app
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import SIZE, TINY_LEVER, _palette_hits, cell, run, select_lever, table, until

WIDE = (200, 50)


def footer_keys(screen) -> list:
    from textual.widgets._footer import FooterKey

    return list(screen.query_one(Footer).query(FooterKey))


def test_footer_at_80_columns_shows_help_and_quit_with_nothing_clipped(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            keys = footer_keys(app.main)
            palette = next(k for k in keys if k.has_class("-command-palette"))
            shown = [k for k in keys if k is not palette]
            assert {"question_mark", "q"} <= {k.key for k in shown}
            # every key ends before the palette hint docked on the right: none is hidden under it
            assert all(k.region.right <= palette.region.x for k in shown), [(k.key, k.region) for k in shown]
            assert palette.region.right <= SIZE[0]
            # the keys left out at 80 still work and are in the help screen
            await pilot.press("p")
            await until(pilot, lambda: type(app.screen).__name__ == "PlanDialog", what="the plan dialog")

    run(go())


def test_a_wide_footer_shows_every_key(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=WIDE) as pilot:
            await pilot.pause()
            shown = {k.key for k in footer_keys(app.main)}
            assert {"r", "n", "R", "c", "p", "f", "d", "e", "question_mark", "q"} <= shown
            assert "x" not in shown  # cancel appears only while a run goes

    run(go())


def test_modals_show_their_own_keys(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            for key, screen, own in (("question_mark", "HelpScreen", "Close"), ("c", "CriterionDialog", "Cancel")):
                await pilot.press(key)
                await until(pilot, lambda: type(app.screen).__name__ == screen, what=screen)
                await until(pilot, lambda: app.screen.query(Footer) and footer_keys(app.screen), what="its footer")
                descriptions = {k.description for k in footer_keys(app.screen)}
                assert own in descriptions and "Run" not in descriptions, descriptions
                # drawn over the main screen's footer, on the bottom row
                assert app.screen.query_one(Footer).region.y == SIZE[1] - 1
                await pilot.press("escape")
                await until(pilot, lambda: app.screen is app.main, what="back to the main screen")

    run(go())


def test_palette_offers_views_and_levers_and_names_keys_as_typed(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            commands = {c.title: c.help for c in app.get_system_commands(app.main)}
            assert {"View detail", "View graph", "View run", "View history", "Lever amp", "Lever julia_port"} \
                <= set(commands)
            assert commands["Help"].endswith("(? or f1)") and "(2)" in commands["View graph"]
            assert not any("(key " in h for h in commands.values())
            await pilot.press("ctrl+p", *"Lever amp")
            await until(pilot, lambda: _palette_hits(app), what="the palette's hits")
            await pilot.press("enter")
            await until(pilot, lambda: table(app).selected == "amp", what="amp selected")
            await until(pilot, lambda: "amp  AMP trainer" in app.main.query_one("#detail-view").plain,
                        what="amp's detail")
            await pilot.press("ctrl+p", *"View graph")
            await until(pilot, lambda: _palette_hits(app), what="the palette's hits")
            await pilot.press("enter")
            await until(pilot, lambda: app.main.query_one("#views").active == "graph", what="the graph view")

    run(go())


def test_why_column_names_the_key_to_press_and_follows_the_gate_chain(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert cell(app, "julia_port", "why") == "c: record criteria"
            assert cell(app, "option_b", "why") == "c on julia_port: record criteria (needs NO-GO)"
            assert cell(app, "amp", "why") == "c on julia_port: record criteria (gate model_size)"
            assert cell(app, "cython_bot", "why") == ""  # decided: nothing asked
            assert cell(app, "option_b", "saved") == "4.46"  # whatif.hours_by_lever, formatted by fmt_h
            # record NO-GO by key, then the console says what to press, never a shell command
            await pilot.press("c")
            await until(pilot, lambda: type(app.screen).__name__ == "CriterionDialog", what="the dialog")
            await pilot.press("enter", "f", "enter", "tab", *"no GPU build", "enter")
            await until(pilot, lambda: cell(app, "julia_port", "state") == "decided NO-GO", what="NO-GO")
            assert cell(app, "option_b", "why") == "p: write its plan"
            assert cell(app, "model_size", "why") == "p on option_b: write its plan"
            assert cell(app, "amp", "why") == "p on option_b: write its plan (gate model_size)"
            assert cell(app, "port", "why").startswith("closed: ")
            status = app.main.query_one("#status").text
            assert status == "next: nothing to run · press p on option_b: write its plan"
            await pilot.press("n")
            await until(pilot, lambda: any("nothing is ready to run · press p on option_b" in n.message
                                           for n in app._notifications), what="n's hint")
            await select_lever(pilot, "tensorrt")
            detail = app.main.query_one("#detail-view").plain
            assert "p on tensorrt" in detail and "press f (eval_dense)" in detail and "optseq " not in detail

    run(go())


def long_id_plan(tmp_path: Path) -> Path:
    import json

    argv = json.dumps(["python", str(TINY_LEVER), "--ratio", "1.5"])
    levers = "".join(f"""
[[levers]]
id = "{lever_id}"
title = "A lever"
kind = "speedup"
plan_doc = "docs/x.md"
run = {argv}
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
""" for lever_id in ("model_size_growth_hidden1024_layers6", "h1024x6"))
    path = tmp_path / "long.toml"
    path.write_text('[plan]\ntitle = "Long ids"\nas_of = 2026-11-01\nlang = "en"\n' + levers, encoding="utf-8")
    return path


def test_ids_fit_when_there_is_room_and_are_cut_with_an_ellipsis_when_not(tmp_path, db):
    plan = long_id_plan(tmp_path)

    async def shown(size) -> list[str]:
        app = make_app(plan, db)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            return [table(app).get_cell(lever, "id").plain for lever in table(app)._ids]

    assert run(shown(WIDE)) == ["model_size_growth_hidden1024_layers6", "h1024x6"]
    narrow = run(shown(SIZE))
    assert narrow[0].endswith("…") and narrow[1] == "h1024x6"


def test_a_wide_terminal_shows_the_graph_and_history_beside_the_table(db):
    async def go(size) -> bool:
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            side = app.main.query_one("#side")
            if side.display:
                graph = app.main.query_one("#side-graph")
                assert graph.marks["option_b"] == "blocked"
                assert side.region.x > table(app).region.right - 1 and graph.region.height >= 10
                assert app.main.query_one("#side-history").lever == "julia_port"
            return side.display

    assert run(go(WIDE)) is True
    assert run(go(SIZE)) is False


def test_detail_starts_at_the_top_for_each_lever(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            detail = app.main.query_one("#detail-view")
            detail.scroll_end(animate=False, immediate=True)
            await until(pilot, lambda: detail.scroll_y > 0, what="the detail scrolled")
            await select_lever(pilot, "port")
            await until(pilot, lambda: detail.lever == "port", what="port's detail")
            assert detail.scroll_y == 0

    run(go())


def test_while_a_gate_runs_the_levers_behind_it_say_they_wait_and_next_is_not_repeated(db, tmp_path, monkeypatch):
    from tests.console.test_app import tiny_plan

    plan = tiny_plan(tmp_path)
    text = plan.read_text(encoding="utf-8").replace('remeasure_when = ["fast"]', 'requires = "fast:decided"')
    plan.write_text(text, encoding="utf-8")
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # fast stays at pair 1 until cancelled

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "slow", "why") == "r on fast: run it", what="slow's gate")
            await select_lever(pilot, "fast")
            await pilot.press("r")
            await until(pilot, lambda: cell(app, "fast", "state") == "running", what="fast running")
            assert cell(app, "slow", "why") == "waits on fast"  # its gate is running: not "x on fast: cancel"
            assert cell(app, "fast", "why") == "x: cancels the run"
            await until(pilot, lambda: "x" in {k.key for k in footer_keys(app.main)}, what="x in the footer")
            assert app.main.query_one("#status").text == "running: fast"  # n waits for it: no "next" meanwhile
            await pilot.press("x")
            await until(pilot, lambda: not app.main.panel.running, what="the cancel")

    run(go())


def test_criteria_columns_are_as_wide_as_their_ids(db, tmp_path):
    import shutil

    from tests.conftest import ROOT

    for name in ("optseq.toml", "optseq_bench.py"):  # the starter `optseq init` writes: criterion `same_result`
        shutil.copy(ROOT / "configs" / "starter" / name, tmp_path / name)

    async def go():
        app = make_app(tmp_path / "optseq.toml", db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "prototype_works")
            return app.main.query_one("#detail-view").plain.splitlines()

    lines = run(go())
    head = next(line for line in lines if line.strip().startswith("candidate"))
    row = next(line for line in lines if line.strip().startswith("the stand-in benchmark"))
    assert head.split() == ["candidate", "runs", "same_result", "status"]
    assert row.index("pending") == head.index("same_result")  # each cell under its criterion


def test_home_and_end_move_the_table_to_the_first_and_last_lever(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            levers = app.main.query_one("#levers")
            levers.focus()
            await pilot.press("end")
            await until(pilot, lambda: levers.selected == "option_a", what="the last lever")
            assert app.main.query_one("#detail-view").plain.startswith("option_a")
            await pilot.press("home")
            await until(pilot, lambda: levers.selected == "julia_port", what="the first lever")

    run(go())
