"""Pilot tests of the console's dialogs: errors inline and cleared once fixed, lists kept inside the dialog,
refusals that keep what was typed, confirmations before deciding a blocked lever or replacing a file, and a
busy sign while an export is written and rendered."""
from __future__ import annotations

import io
import subprocess
import threading

import pytest
from rich.console import Console
from textual.widgets import Input, LoadingIndicator, Select

from optseq.console.tui.app import make_app
from optseq.console.tui.dialogs.decide import DecideDialog
from optseq.console.tui.dialogs.export_path import ExportDialog
from optseq.console.tui.screens import export_preview
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import CEILING_S, SIZE, run, select_lever, stored, until, view

DOC = "# Plan\n\nwritten\n"

GARBAGE = '/nonexistent/../??*garbage<>|:"\x01.md'
"""A path no file system holds a doc at: a control character, wildcards, a missing folder."""


@pytest.fixture(autouse=True)
def _steady_env(monkeypatch):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


def screen_text(app) -> str:
    """The screen as plain text, dialogs over what is behind them, as a terminal would show it."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def busy(widget) -> bool:
    """A loading indicator covers the widget (Textual keeps the cover outside the widget's children)."""
    return isinstance(widget._cover_widget, LoadingIndicator)


def error(app) -> str:
    return str(app.screen.query_one("#form-error").content)


async def type_into(pilot, field: str, text: str) -> None:
    widget = pilot.app.screen.query_one(f"#{field}", Input)
    widget.focus()
    widget.value = text  # as typed: Input.Changed goes to the dialog
    await pilot.pause()


async def choose(pilot, field: str, value) -> None:
    pilot.app.screen.query_one(f"#{field}", Select).value = value
    await pilot.pause()


# -- the error line -------------------------------------------------------------------------------

def test_a_dialog_error_is_inline_and_goes_once_its_field_is_fixed(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("d")  # julia_port, ready
            dialog = app.screen
            await pilot.press("ctrl+s")
            assert error(app) == "choose an outcome (GO, NO-GO)"
            assert "choose an outcome" in screen_text(app)
            await choose(pilot, "outcome", "NO-GO")
            assert error(app) == "a manual decision needs a rationale"  # the next problem, not the fixed one
            await type_into(pilot, "why", "Torch.jl misses c4 by far")
            assert error(app) == ""
            assert app.screen is dialog
            await pilot.press("ctrl+s")
            await until(pilot, lambda: app.screen is app.main, what="the dialog to close")
        status, _ = stored(DEFAULT_PLAN, db)
        assert view(status, "julia_port")["outcome"] == "NO-GO"

    run(go())


def test_an_open_list_stays_inside_the_dialog_and_off_the_error_line(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            await pilot.press("ctrl+s")  # the outcome is not chosen yet: the error line is up
            assert error(app) == "choose pass or fail"
            outcome = app.screen.query_one("#outcome", Select)
            outcome.focus()
            await pilot.press("enter")
            await until(pilot, lambda: outcome.expanded, what="the list to open")
            box = app.screen.query_one("FormDialog > Vertical")
            overlay = outcome.query_one("SelectOverlay")
            inside = box.content_region
            assert inside.contains_region(overlay.region), (overlay.region, inside)
            assert not overlay.region.overlaps(app.screen.query_one("#form-error").region)
            assert "choose pass or fail" in screen_text(app)

    run(go())


# -- the criterion dialog ---------------------------------------------------------------------------

def test_the_criterion_dialog_names_criteria_and_shows_results_by_criterion(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            criterion = app.screen.query_one("#criterion", Select)
            assert criterion.value == "c4"
            text = screen_text(app)
            # the seed's titles only say the id again (`criterion 4`): the choice says where their wording is
            assert "c4 (worded in the plan doc)" in text and "criterion 4" not in text, text
            assert str(app.screen.query_one("#criteria-doc").content) == \
                "what each criterion asks: docs/research/julia_port_evaluation.md"
            results = str(app.screen.query_one("#criteria-results").content)
            assert "Torch.jl  c1 pass · c2 pass · c3 pass · c4 pending" in results
            # Flux failed as a whole: no row of pendings beside a FAIL
            flux = next(line for line in results.splitlines() if line.startswith("Flux"))
            assert "failed as a whole" in flux and "pending" not in flux

    run(go())


# -- the plan dialog and `optseq plan` ----------------------------------------------------------------

def test_the_plan_dialog_refuses_a_missing_or_garbage_path_until_it_names_a_doc(db, tmp_path):
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    doc = tmp_path / "option_b.md"
    doc.write_text("# Option B\n", encoding="utf-8")

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "option_b")
            await pilot.press("p")
            dialog = app.screen
            await type_into(pilot, "path", GARBAGE)
            await pilot.press("ctrl+s")
            assert app.screen is dialog
            assert error(app) == ('plan doc /nonexistent/../??*garbage<>|:"\\x01.md: not a usable path '
                                  "(it holds control characters)")
            await type_into(pilot, "path", str(doc))
            assert error(app) == ""  # gone as soon as the path names a doc, before OK
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is app.main, what="the dialog to close")
        status, _ = stored(DEFAULT_PLAN, db)
        assert view(status, "option_b")["plan_doc"] == str(doc)

    run(go())


def test_optseq_plan_refuses_a_garbage_path_and_notes_a_missing_doc(cli_env, db):
    proc = subprocess.run([*OPTSEQ, "plan", "tensorrt", GARBAGE], env=cli_env, capture_output=True, text=True)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "plan doc " in lines[0] and GARBAGE.replace("\x01", "\\x01") in lines[0], proc.stderr
    status, _ = stored(DEFAULT_PLAN, db)
    assert view(status, "tensorrt")["plan_doc"] is None
    # a doc not there is refused (the console's p asks first), unless --missing-ok: it may live in another checkout,
    # recorded as given, and the reply says it is not here
    proc = subprocess.run([*OPTSEQ, "plan", "tensorrt", "docs/plans/no_such_doc.md"], env=cli_env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--missing-ok" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert view(stored(DEFAULT_PLAN, db)[0], "tensorrt")["plan_doc"] is None
    proc = subprocess.run([*OPTSEQ, "plan", "tensorrt", "docs/plans/no_such_doc.md", "--missing-ok"], env=cli_env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "note: docs/plans/no_such_doc.md is not there from here" in proc.stdout
    status, _ = stored(DEFAULT_PLAN, db)
    assert view(status, "tensorrt")["plan_doc"] == "docs/plans/no_such_doc.md"


# -- deciding -----------------------------------------------------------------------------------------

def test_deciding_a_blocked_lever_asks_first_and_says_why(db):
    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "tensorrt")
            await pilot.press("d")
            assert type(app.screen).__name__ == "ConfirmDialog"
            question = str(app.screen.query_one("#question").content)
            assert question.startswith("tensorrt is blocked: model_size is not decided yet")
            assert "fact eval_dense is not set true" in question and "optseq " not in question
            await pilot.press("n")
            assert app.screen is app.main
            await pilot.press("d", "y")
            assert isinstance(app.screen, DecideDialog)
        status, _ = stored(DEFAULT_PLAN, db)
        assert view(status, "tensorrt")["outcome"] is None

    run(go())


def test_a_refused_decision_keeps_the_dialog_and_its_rationale(db):
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")  # NO-GO: the port closes

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            await select_lever(pilot, "port")
            await pilot.press("d")
            dialog = app.screen
            assert isinstance(dialog, DecideDialog)
            await choose(pilot, "outcome", "adopt")
            await type_into(pilot, "why", "we ported anyway")
            await pilot.press("enter")
            assert app.screen is dialog
            assert error(app).startswith("port is closed")
            assert dialog.query_one("#why", Input).value == "we ported anyway"

    run(go())


def test_an_experiment_is_decided_from_the_configs_its_runs_measured(db):
    from optseq.state.lifecycle.run_index import kept_run

    runs = [kept_run({"id": 1, "summary": {"best_of": {"configs": {"h256x2": {}, "h1024x6": {}}}}}),
            kept_run({"id": 2, "summary": {"arms": {"h1024x6": {}, "h512x4": {}}}})]  # as the run index keeps them

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            dialog = DecideDialog(app.seq.plan.lever("model_size"), runs)
            await app.push_screen(dialog)
            outcome = dialog.query_one("#outcome")
            assert isinstance(outcome, Select)  # a list: no name to mistype
            assert [value for _, value in outcome._options if value is not Select.NULL] == \
                   ["h256x2", "h1024x6", "h512x4", "defer"]
            await pilot.press("ctrl+s")
            assert error(app) == "choose an outcome (h256x2, h1024x6, h512x4, defer)"

            unmeasured = DecideDialog(app.seq.plan.lever("model_size"), [])
            await app.push_screen(unmeasured)
            assert "has measured a config yet" in screen_text(app)

    run(go())


# -- exporting --------------------------------------------------------------------------------------

def open_export(pilot, path) -> None:
    dialog = pilot.app.screen
    assert isinstance(dialog, ExportDialog)
    dialog.query_one("#path", Input).value = str(path)


def test_an_export_to_a_directory_stays_open_with_a_plain_error_and_leaves_nothing(db, tmp_path):
    out = tmp_path / "out"
    out.mkdir()

    async def go():
        app = make_app(DEFAULT_PLAN, db, export_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            open_export(pilot, out)
            dialog = app.screen
            await pilot.press("enter")
            await until(pilot, lambda: error(app), what="the export's refusal")
            assert app.screen is dialog
            assert "is a directory" in error(app) and "Errno" not in error(app)
            assert not dialog.query_one(".form-buttons").loading
        assert list(out.iterdir()) == []

    run(go())


def test_an_existing_file_is_replaced_only_after_a_yes(db, tmp_path):
    target = tmp_path / "notes.md"
    target.write_text("my own notes\n", encoding="utf-8")

    async def go():
        app = make_app(DEFAULT_PLAN, db, export_dir=tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            open_export(pilot, target)
            dialog = app.screen
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog", what="the question")
            assert "not written by optseq export" in str(app.screen.query_one("#question").content)
            await pilot.press("n")
            await until(pilot, lambda: app.screen is dialog, what="back to the export dialog")
            assert error(app) == f"{target} kept; give another file to write"
            assert target.read_text(encoding="utf-8") == "my own notes\n"
            await pilot.press("enter", "y")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")
            assert target.read_text(encoding="utf-8").startswith("# Optimization Sequencing")
            # an earlier optseq export is a file too: asked about again, never silently replaced
            await pilot.press("escape", "e")
            open_export(pilot, target)
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog", what="the second question")
            assert "an earlier optseq export" in str(app.screen.query_one("#question").content)

    run(go())


def test_the_export_shows_it_is_busy_while_it_writes_and_the_preview_has_the_doc_at_once(db, tmp_path):
    release = threading.Event()

    def slow_export(path, lang, force):
        release.wait(CEILING_S)  # held until the test has seen the busy dialog
        return tmp_path / "plan.md", DOC

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=SIZE) as pilot:
            dialog = ExportDialog(str(tmp_path / "plan.md"), "en", export=slow_export)
            closed = []
            await app.push_screen(dialog, closed.append)
            await pilot.press("enter")
            box = dialog.query_one(".form-buttons")  # the buttons, never the path being typed
            await until(pilot, lambda: busy(box), what="the busy sign")
            await pilot.press("escape")  # not closed under a write in flight
            assert app.screen is dialog
            release.set()
            await until(pilot, lambda: closed, what="the dialog to close")
            assert closed == [(tmp_path / "plan.md", DOC)]

            # the file is written by now: its preview is whole on its first paint, with nothing left to run
            preview = export_preview.ExportPreview(DOC, str(tmp_path / "plan.md"))
            await app.push_screen(preview)
            assert preview.query_one("#export-doc").content.markup == DOC  # in the screen as it mounts
            await pilot.pause()
            assert not preview.workers and not preview.query(LoadingIndicator)
            text = screen_text(app)
            # the path whole in its label (a long temporary path wraps past the 80 columns the screen text shows)
            assert str(preview.query_one("#export-path").content).startswith(f"wrote {tmp_path / 'plan.md'}  ")
            assert "wrote " in text and "Plan" in text and "written" in text
            await pilot.press("escape")  # back at once: nothing of the preview's is left running
            assert app.screen is not preview and not preview.workers

    run(go())
