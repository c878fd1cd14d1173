"""The console tells the truth and says it whole (issue 38): a stored text cannot drive the terminal from the detail,
an eroded gain is not shown done, and the run tab, the detail and the footer at 80x24 keep what they cut or wrap
readable."""
from __future__ import annotations

import re
import subprocess

import pytest
from textual.geometry import Region

from optseq.console.tui.app import make_app
from optseq.console.tui.widgets.lever_detail import LeverDetail
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import SIZE, _steady_env, run, select_lever, until  # noqa: F401

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""ESC, BEL and every other control but a newline or a tab: what a stored text must not bring to the screen."""


def rendered(widget) -> str:
    """The widget's lines as the compositor gets them to paint: every segment's text of its strips."""
    region = Region(0, 0, widget.size.width, max(widget.virtual_size.height, widget.size.height))
    return "\n".join("".join(seg.text for seg in strip) for strip in widget.render_lines(region))


def test_an_evidence_text_with_a_title_escape_reaches_the_detail_without_it(db):
    evidence = "ev \x1b]0;TITLE\x07 text"
    subprocess.run([*OPTSEQ, "--plan", str(DEFAULT_PLAN), "--db", str(db), "record", "julia_port", "torch_jl",
                    "c1", "pass", "--evidence", evidence], check=True, capture_output=True)

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "julia_port")
            detail = app.main.query_one(LeverDetail)
            await until(pilot, lambda: "ev " in detail.plain, what="the evidence in the detail")
            line = next(x for x in detail.plain.splitlines() if "ev " in x)
            assert line.endswith("c1: ev  text"), repr(line)  # the title sequence gone whole, text kept
            assert not UNSAFE.search(detail.plain), repr(detail.plain)
            static = detail.query_one("#detail-body")
            assert not UNSAFE.search(rendered(static)), repr(rendered(static))

    run(go())


async def _held_run(pilot, app) -> None:
    """fast started and held at its first pair (TINY_LEVER_HOLD names a file that never comes)."""
    from tests.console.test_layout import footer_keys

    await select_lever(pilot, "fast")
    await pilot.press("r")
    await until(pilot, lambda: "x" in {k.key for k in footer_keys(app.main)}, what="x in the footer")


def test_during_a_run_at_80_columns_the_footer_keeps_quit(db, tmp_path, monkeypatch):
    from tests.console.test_app import tiny_plan
    from tests.console.test_layout import footer_keys

    plan = tiny_plan(tmp_path)
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await _held_run(pilot, app)
            keys = footer_keys(app.main)
            palette = next(k for k in keys if k.has_class("-command-palette"))
            shown = [k for k in keys if k is not palette]
            assert {"x", "q", "question_mark"} <= {k.key for k in shown}, [k.key for k in shown]
            assert all(k.region.right <= palette.region.x for k in shown), [(k.key, k.region) for k in shown]
            await pilot.press("x")
            await until(pilot, lambda: not app.main.panel.running, what="the cancel")

    run(go())


def test_a_cancelled_run_says_so_once_and_its_why_cell_keeps_what_r_does(db, tmp_path, monkeypatch):
    from tests.console.test_app import cell, tiny_plan

    plan = tiny_plan(tmp_path)
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await _held_run(pilot, app)
            await pilot.press("x")
            await until(pilot, lambda: not app.main.panel.running, what="the cancel")
            await until(pilot, lambda: cell(app, "fast", "state") != "running", what="the table after the cancel")
            why = cell(app, "fast", "why")
            assert why == "r: retry, last run 1 cancelled", why
            shown = app.main.query_one("#levers").get_cell("fast", "why").plain
            assert shown.startswith("r: re"), shown  # the key and what it does, cut with an ellipsis: not a bare key
            detail = app.main.query_one(LeverDetail).plain
            texts = [detail, str(app.main.panel.query_one("#run-title").render()),
                     *(n.message for n in app._notifications)]
            assert not any("cancelled: cancelled" in t for t in texts), texts

    run(go())


def test_a_wrapped_detail_line_keeps_its_indent(db):
    words = " ".join(f"word{i}" for i in range(30))  # wider than the pane at 80 columns
    subprocess.run([*OPTSEQ, "--plan", str(DEFAULT_PLAN), "--db", str(db), "record", "julia_port", "torch_jl",
                    "c1", "pass", "--evidence", words], check=True, capture_output=True)

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "julia_port")
            detail = app.main.query_one(LeverDetail)
            await until(pilot, lambda: "word29" in detail.plain, what="the evidence in the detail")
            lines = rendered(detail.query_one("#detail-body")).splitlines()
            first = next(i for i, line in enumerate(lines) if "c1: word0 " in line)
            last = next(i for i, line in enumerate(lines) if "word29" in line)
            assert last > first, lines[first:last + 1]  # it wraps
            indent = len(lines[first]) - len(lines[first].lstrip())
            for line in lines[first + 1:last + 1]:  # each wrapped part under the line's own indent
                assert line.startswith(" " * indent) and line[indent:].startswith("word"), lines[first:last + 1]

    run(go())


def test_a_cut_log_line_ends_in_an_ellipsis(db, tmp_path):
    from tests.console.test_app import tiny_plan

    async def go():
        app = make_app(tiny_plan(tmp_path), db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "fast")
            await pilot.press("r")
            await until(pilot, lambda: app.main.panel.last_report is not None and not app.main.panel.running,
                        what="the run's end")
            log = app.main.panel.query_one("#run-log")
            width = log.scrollable_content_region.width
            log.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            shown = rendered(log).splitlines()[:log.size.height]
            # each `[optseq] launch N of the 6 a first look needs …; next launch: …` line shown, with its whole text
            whole = {line[:40]: line for line in log.lines if line.startswith("[optseq] launch")}
            long = [(whole[line[:40]], line) for line in shown if line[:40] in whole
                    and len(whole[line[:40]]) > width]
            assert long, shown
            for full, line in long:
                assert line[:width].endswith("…") and full.startswith(line[:width - 1]), (full, line)

    run(go())


@pytest.mark.slow  # a watch's arms are processes
def test_an_eroded_gain_is_eroded_in_the_console_and_its_export_preview_lists_it_as_waiting(tmp_path, db):
    from tests.console.test_app import cell
    from tests.state.lifecycle.test_watch import PLAN, cli

    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    cli(plan, db, "decide", "fast", "adopt", "--why", "the profile says so")
    cli(plan, db, "--run", "watch", code=6, gain="0.0003")
    (tmp_path / "out").mkdir()

    async def go():
        app = make_app(plan, db, export_dir=tmp_path / "out")
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "fast")
            assert cell(app, "fast", "state") == "eroded"
            detail = app.main.query_one(LeverDetail).plain
            watch = next(line for line in detail.splitlines() if line.startswith("watch: "))
            assert "e-4× [" in watch and watch.endswith("against no figure when adopted (decided by hand, with no "
                                                        "run)"), watch
            await pilot.press("e")
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")
            doc = app.screen.markdown
            assert "No lever is waiting for a decision." not in doc and "- ⚠️ the fast path: adopt" in doc, doc
            assert "?" not in doc and "✅" not in doc, doc

    run(go())
