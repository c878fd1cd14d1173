"""The dependency graph, the export's text graph, the history plot, and colours in 16 colours and NO_COLOR."""
from __future__ import annotations

from rich.color import Color as RichColor, ColorSystem
from textual import constants
from textual.color import Color

from optseq.console.tui.app import make_app
from optseq.console.tui.widgets.history_plot import nice_ticks
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import SIZE, _steady_env, run, select_lever, tiny_plan, until  # noqa: F401


def graph_lines(app) -> list[str]:
    graph = app.main.query_one("#graph-view")
    lines: list[str] = []

    def walk(node) -> None:
        for child in node.children:
            lines.append(str(child.label))
            walk(child)

    walk(graph.root)
    return lines


def test_graph_lists_each_lever_once_with_a_legend(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")
            lines = graph_lines(app)
            ids = [line.split(" [")[0].split(" → ")[-1] for line in lines]
            assert sorted(ids) == sorted(set(ids)) and "option_a" in ids  # option_a has two gates, one line
            option_a = next(line for line in lines if line.startswith("option_a"))
            assert option_a.endswith("· or after model_size")
            assert app.main.query_one("#graph-view").border_title.startswith("ready: can run")

    run(go())


def test_graph_never_doubles_words_and_shows_measured_figures(tmp_path, db):
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    plan = tiny_plan(tmp_path)

    async def seed():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")
            julia = next(line for line in graph_lines(app) if line.startswith("julia_port"))
            assert julia == "julia_port [decided] NO-GO"  # never `[decided] decided NO-GO`

    run(seed())
    tiny_db = tmp_path / "tiny-state"
    with Sequencer.open(plan, tiny_db, mode="write") as seq:
        seq.run_lever("fast")

    async def tiny():
        app = make_app(plan, tiny_db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("2")
            fast = next(line for line in graph_lines(app) if line.startswith("fast"))
            assert fast.startswith("fast [decided] adopted 1.5") and "×" in fast
            for line in graph_lines(app):
                assert "[ready] measured" not in line

    run(tiny())


def test_export_text_graph_speaks_go_and_no_go(db):
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        doc = seq.views.export()
    tree = doc[doc.index("```"):doc.index("```mermaid")]
    assert "GO → port" in tree and "NO-GO → Python/Cython" in tree
    assert "PASS" not in tree and "FAIL" not in tree


def test_history_plot_says_no_run_plainly_and_keeps_bars_inside(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def look(lever: str):
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, lever)
            await pilot.press("4")
            await pilot.pause()
            plot = app.main.query_one("#history-view")
            return plot.message, plot.points, plot.y_range, str(plot.render())

    message, _, _, shown = run(look("slow"))
    assert message == "slow: no run yet" and shown == "slow: no run yet"  # no empty frame with axes
    with Sequencer.open(plan, db, mode="write") as seq:
        seq.run_lever("fast")
        seq.run_lever("fast")
    message, points, (bottom, top), shown = run(look("fast"))
    assert not message and len(points) == 2
    for _, estimate, low, high in points:
        assert bottom < low <= estimate <= high < top  # every whisker ends inside the frame
    assert bottom < 1.2 < top and "min 1.2×" in shown  # the threshold line says what it is
    ticks = nice_ticks(1.2, 1.52)
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1 and ticks[0] <= 1.2 and ticks[-1] >= 1.52


def standard(color) -> int:
    return RichColor.parse(color.hex).downgrade(ColorSystem.STANDARD).number


def test_sixteen_colours_keep_dialogs_neutral_and_errors_red(db, monkeypatch):
    monkeypatch.setattr(constants, "COLOR_SYSTEM", "standard")  # as TERM=xterm without COLORTERM picks

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            assert app.has_class("-ansi16")
            red = standard(Color.parse(app.theme_variables["error"]))
            await until(pilot, lambda: app.main.query("FooterKey"), what="the footer's keys")
            key = app.main.query("FooterKey").first()
            assert standard(key.get_component_styles("footer-key--key").color) != red  # keys are not warnings
            await pilot.press("c")
            dialog = app.screen
            box = dialog.query_one("Vertical")
            error = dialog.query_one("#form-error")
            assert standard(box.styles.border_top[1]) != red  # a dialog is not framed like an error
            assert standard(error.styles.color) == red  # and its error line is red, not white
            await pilot.press("escape", "2")
            graph = app.main.query_one("#graph-view")
            ready = next(n for n in graph.root.children if n.data == "julia_port").label
            span = next(s for s in ready.spans if "[ready]" in ready.plain[s.start:s.end])
            assert "green" in str(span.style)  # an ANSI colour every 16-colour terminal has

    run(go())


def test_no_color_errors_are_not_darker_than_text(db, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            dialog = app.screen
            error = dialog.query_one("#form-error").styles
            text = dialog.query_one(".form-title").styles
            assert error.color.brightness >= text.color.brightness
            assert error.text_style.bold

    run(go())


def test_history_of_a_lever_with_nothing_to_run_says_so(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "julia_port")
            await pilot.press("4")
            await until(pilot, lambda: app.main.query_one("#history-view").lever == "julia_port", what="its history")
            return app.main.query_one("#history-view").message

    assert run(go()) == "julia_port: nothing to measure (decided by criteria or by hand)"
