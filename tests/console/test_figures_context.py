"""Every figure the console shows says what it was measured on and agrees with its neighbours (issue 32, point 7),
and the console at 80x24 (point 8): notifications off the detail, `x` idle says so, the detail scrolls from the
table, the why / next column fits."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from textual.app import App

from optseq.console.tui.app import make_app
from optseq.console.tui.widgets.history_plot import HistoryPlot
from optseq.console.tui.widgets.lever_detail import LeverDetail
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import SIZE, TINY_LEVER, _steady_env, cell, run, select_lever, until  # noqa: F401

USER_BENCH = Path(__file__).parents[1] / "state" / "lever_scripts" / "user_bench.py"


def plan(tmp_path: Path, levers: str, volume: bool = False) -> Path:
    path = tmp_path / "plan.toml"
    more = ('\n[volume]\ns_per_iter = 30.0\n\n[[volume.experiments]]\nid = "grow"\nconfigs = 4\niterations = 200\n'
            'runs = 3\n') if volume else ""
    path.write_text('[plan]\ntitle = "Figures"\nas_of = 2026-11-01\nlang = "en"\n' + levers + more, encoding="utf-8")
    return path


def tiny(lever_id: str, *args: str, rule: str = "repeats = 6, max_repeats = 12") -> str:
    return f"""
[[levers]]
id = "{lever_id}"
title = "{lever_id.title()}"
kind = "speedup"
plan_doc = "docs/{lever_id}.md"
run = {json.dumps(["python", str(TINY_LEVER), "--log-lines", "0", *args])}
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, {rule} }}
"""


COMMAND_PAIR = f"""
[[levers]]
id = "pairs"
title = "FAST=1"
kind = "speedup"
timeout_s = 120
rule = {{ metric = "samples_per_s", min_speedup = 1.00001, repeats = 6, max_repeats = 12 }}
[levers.arms]
command = ["python", "{USER_BENCH}"]
candidate_env = {{ FAST = "1" }}
metric = {{ name = "samples_per_s", regex = 'samples/s: ([0-9.]+)', unit = "samples/s" }}
"""
"""A command-pair lever as a user writes one: no plan_doc, no code. Its bench's baseline varies by a thousandth
of a sample/s from pair to pair, wider than the 0.001% its rule resolves: the run is noted noisy."""


def detail(app) -> str:
    return app.main.query_one(LeverDetail).plain


# -- point 7: numbers with their context ---------------------------------------------------------------------------

def test_saved_hours_from_a_ci_size_ratio_say_ci_and_the_detail_says_where_they_come_from(tmp_path, db):
    path = plan(tmp_path, tiny("ref", "--bench-size", "ci") + tiny("team"), volume=True)

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=SIZE) as pilot:
            for lever in ("ref", "team"):
                await select_lever(pilot, lever)
                await pilot.press("r")
                await until(pilot, lambda: not app.main.panel.running and cell(app, lever, "state") == "adopted",
                            what=f"{lever}'s run to land")
            await until(pilot, lambda: cell(app, "team", "saved") not in ("…", "-"), what="the hours saved")
            # the same 1.5x on both: the CI-size one says so in the 7 columns the cell has, the team's does not
            assert cell(app, "ref", "saved").endswith(" ci") and len(cell(app, "ref", "saved")) <= 7
            float(cell(app, "ref", "saved").removesuffix(" ci"))
            float(cell(app, "team", "saved"))
            await select_lever(pilot, "ref")
            line = next(x for x in detail(app).splitlines() if x.startswith("saved: "))
            assert "measured at CI size (the reference workload, not the plan's)" in line, line
            await select_lever(pilot, "team")
            line = next(x for x in detail(app).splitlines() if x.startswith("saved: "))
            assert "CI size" not in line and "1.5" in line, line

    run(go())


def test_a_held_runs_progress_samples_and_estimate_count_the_same_pairs(tmp_path, db, monkeypatch):
    release = tmp_path / "release"
    # 6 launches of 2 pairs: held in launch 2 with its first baseline in and its candidate not (pair 3 of the run)
    monkeypatch.setenv("TINY_LEVER_HOLD_MID", str(release))
    path = plan(tmp_path, tiny("held"))

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("r")
            panel = app.main.panel

            def shown(widget: str) -> str:
                return str(panel.query_one(widget).render())

            await until(pilot, lambda: shown("#run-samples").startswith("samples: 5 "), what="pair 3's baseline")
            await until(pilot, lambda: "over 2 pairs" in shown("#run-estimate") and "pair 2 of" in
                        shown("#run-progress-msg"), what="the estimate and progress of two pairs")
            # the half pair is the run's third, not launch 2's first
            assert shown("#run-samples").startswith("samples: 5 (2 pairs)  last: pair 3 baseline"), \
                shown("#run-samples")
            release.touch()
            await until(pilot, lambda: not panel.running, what="the run to end")

    run(go())


def test_the_history_plots_min_line_is_on_the_row_labelled_with_its_value():
    # a CI-size figure two orders above its threshold: the axis runs in 50s, and 1.3 used to share the 0x row
    runs = [{"id": i + 1, "lever": "ref", "status": "succeeded",
             "summary": {"stats": {"estimate": e, "ci_low": e - 5, "ci_high": e + 5, "n": 6}}}
            for i, e in enumerate([149.0, 150.0, 151.0])]
    lever = SimpleNamespace(id="ref", run=("x",), rule=SimpleNamespace(min_speedup=1.3, choose=None))

    class OnePlot(App):
        def compose(self):
            yield HistoryPlot()

    async def go():
        app = OnePlot()
        async with app.run_test(size=(80, 16)) as pilot:
            plot = app.query_one(HistoryPlot)
            plot.show(lever, runs)
            await until(pilot, lambda: plot.settled and plot._figure is None, what="the plot drawn")
            rows = [line for line in app.screen._compositor.render_strips()]
            text = ["".join(segment.text for segment in strip) for strip in rows]
            (line,) = [row for row in text if "min 1.3×" in row]
            label = line.split("├")[0].split("┤")[0].strip()
            assert label == "1.3×", (label, "\n".join(text))
            assert not [row for row in text if row.strip().startswith("0×")], "\n".join(text)

    run(go())


def test_a_command_pair_lever_shows_no_undeclared_doc_or_code_and_its_noise_speaks_of_pairs(tmp_path, db, cli_env):
    path = plan(tmp_path, COMMAND_PAIR)
    env = dict(cli_env, OPTSEQ_PLAN=str(path), OPTSEQ_LOADAVG="0")
    proc = subprocess.run([*OPTSEQ, "--run", "pairs"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    note = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                     timeout=120).stdout)["runs"][0]["summary"]["stats"]["noise"]
    # each arm run is its own process: there is no launch holding several pairs to be spread within
    assert note.startswith("noisy: the baseline's spread from pair to pair (IQR "), note
    assert "within a launch" not in proc.stdout

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = detail(app)
            assert "plan doc" not in shown and "code:" not in shown and "merged-default-off" not in shown, shown
            assert "within a launch" not in shown and "from pair to pair" in shown, shown

    run(go())


def test_a_lever_that_declares_its_doc_and_code_still_shows_them(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "cython_bot")  # the default plan writes `code = "enabled"` for it
            assert "code: enabled" in detail(app)
            await select_lever(pilot, "port")  # no doc yet, and it waits for one
            assert "plan doc: not written" in detail(app)

    run(go())


# -- point 8: the console at 80x24 ----------------------------------------------------------------------------------

def test_x_with_nothing_running_says_so(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("x")
            await until(pilot, lambda: app._notifications, what="a notification")
            assert [n.message for n in app._notifications] == ["nothing is running"]

    run(go())


def test_notifications_stand_over_the_table_not_the_detail(tmp_path, db):
    path = plan(tmp_path, tiny("one") + tiny("two"))  # a short table: the detail starts high up

    def screen_rows(app) -> list[str]:
        return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            top = app.main.query_one(LeverDetail).region.y
            before = screen_rows(app)[top:]
            app.main.notify("a long notification that wraps onto a second line at eighty columns, as errors do",
                            severity="error")
            await until(pilot, lambda: any("a long notification" in row for row in screen_rows(app)),
                        what="the first toast")
            assert screen_rows(app)[top:] == before  # the detail as it was: no toast over it
            await pilot.press("x")  # a newer one shows, over the table too, not clipped under the older one
            await until(pilot, lambda: any("nothing is running" in row for row in screen_rows(app)[:top]),
                        what="the newest toast")
            await pilot.pause()
            assert screen_rows(app)[top:] == before

    run(go())


def test_the_detail_scrolls_from_the_table_and_the_help_says_how(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            table = app.main.query_one("#levers")
            pane = app.main.query_one(LeverDetail)
            await until(pilot, lambda: pane.max_scroll_y > 2, what="a detail longer than its pane")
            await pilot.press("shift+down", "shift+down")
            await until(pilot, lambda: pane.scroll_y == 2, what="two lines down")
            assert table.has_focus and table.selected == "julia_port"  # the arrows still move the lever
            await pilot.press("shift+pagedown")
            await until(pilot, lambda: pane.scroll_y > 2, what="a page down")
            await pilot.press("shift+up")
            await pilot.press("question_mark")
            await pilot.pause()
            from textual.widgets import Markdown

            help_text = app.screen.query_one(Markdown).source
            assert "Shift+↑ / Shift+↓ scroll the detail pane" in help_text
            assert "| shift+↑ shift+↓ | scroll detail |" in help_text

    run(go())


def test_the_why_next_column_fits_at_80_columns_and_the_detail_has_it_whole(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            table = app.main.query_one("#levers")
            width = table._widths["why"]
            await select_lever(pilot, "option_b")
            full = cell(app, "option_b", "why")
            assert full == "c on julia_port: record criteria (needs NO-GO)"
            shown = str(table.get_cell("option_b", "why"))
            assert shown == "c on julia_port" and len(shown) <= width and "…" not in shown
            assert f"next: {full}" in detail(app)

    run(go())


def test_the_footer_names_the_detail_keys_where_it_has_room(db):
    from optseq.console.tui.widgets.key_footer import SCROLL_FROM

    def footer_text(app) -> str:
        strip = list(app.screen._compositor.render_strips())[-1]
        return "".join(segment.text for segment in strip)

    async def go(width: int) -> str:
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(width, 24)) as pilot:
            await until(pilot, lambda: "q Quit" in footer_text(app), what="the footer's keys")
            return footer_text(app)

    assert "⇧↓⇧↑ Scroll detail" in run(go(SCROLL_FROM))
    narrow = run(go(80))  # at 80 the help names them; the footer keeps ? and q on screen
    assert "Scroll detail" not in narrow and "? Help q Quit" in narrow
