"""What the console's first screen imports (issue 25): not the dialogs, the help, the export, the plots, the serve
path nor the heavy libraries; each comes in where it first opens, and opening it still works. Module sets, never
times: the figures are `make paint-bench`'s (docs/performance.md)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import DEFAULT_PLAN

NOT_ON_THE_FIRST_SCREEN = (
    "optseq.console.tui.dialogs",  # every form and the confirm dialog (the package, so any of them)
    "optseq.console.tui.screens.help",
    "optseq.console.tui.screens.export_preview",
    "optseq.console.tui.serve",
    "optseq.state.report",  # the export's renderer
    "optseq.state.runs.lever_run",  # the run machinery, imported when a run starts
    "optseq.state.actions",  # the sequencer's acting and run-starting parts, built at their first use
    "optseq.state.lever_runs",
    "optseq.state.runs.passes",  # the pass planner: the detail of a lever with a rule (julia_port has none)
    "optseq.engine",
    "transitions",  # a store read from its snapshot moves no lever: the machines come with the first move
    "optseq.state.runs.stats",  # and `statistics`: the run lines' arms text, where a run is listed
    "statistics",
    "textual.widgets._markdown",  # the help and the export preview
    "markdown_it",
    "textual_plotext",
    "plotext",
    "textual_serve",
    "aiohttp",
    "matplotlib",
    "scipy",
    "torch",
)
"""Module trees the first screen on the default plan at 80×24 must not load, its post-paint work included, on a
store that exists (the test makes it first with `optseq status`, as the paint bench's uncounted round does)."""

SCRIPT = """
import asyncio, json, sys
from optseq.console.tui.app import make_app

NOT = {not_!r}
ROUNDS = 2000  # pauses before a wait is called a hang: a count, never a time budget


def loaded():
    return sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in NOT))


async def until(pilot, predicate, what):
    for _ in range(ROUNDS):
        if predicate():
            return
        await pilot.pause(0.01)
    raise SystemExit(f"never came: {{what}}")


async def go():
    app = make_app({plan!r}, {db!r})
    seen = {{}}
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.main.query_one("#levers")
        # the first screen, and what it does just after its first frame: the hours-saved column and the views
        # behind their tabs (Lazy) are there
        await until(pilot, lambda: table.cell_text("option_b", "saved") == "4.46", "the hours-saved column")
        await until(pilot, lambda: app.main.query("#graph-view") and app.main.query("#history-view"), "the views")
        seen["first screen"] = loaded()
        seen["saved"] = table.cell_text("option_b", "saved")
        await pilot.press("4")  # the History tab: julia_port has nothing to plot, so no plot is drawn
        await until(pilot, lambda: app.main.query_one("#views").active == "history", "the history tab")
        seen["history tab"] = loaded()
        seen["history"] = app.main.query_one("#history-view").message
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help")
        seen["help"] = loaded()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, "the main screen again")
        await pilot.press("c")  # julia_port is selected: a decision lever, so the criterion form opens
        await until(pilot, lambda: type(app.screen).__name__ == "CriterionDialog", "the criterion dialog")
        seen["criterion dialog"] = loaded()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.main, "the main screen again")
        await pilot.press("e")
        await until(pilot, lambda: type(app.screen).__name__ == "ExportDialog", "the export dialog")
        seen["export dialog"] = loaded()
    print(json.dumps(seen))


asyncio.run(go())
"""


def _make_store(db) -> None:
    from optseq.state.store.store import Store

    Store.open(db, mode="write").close()  # a read (status) of a --db with no store is refused
    proc = subprocess.run([sys.executable, "-m", "optseq.console.cli", "status", "--plan", str(DEFAULT_PLAN),
                           "--db", str(db)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2], env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_first_screen_imports_none_of_what_it_does_not_show(db):
    _make_store(db)
    code = SCRIPT.format(not_=NOT_ON_THE_FIRST_SCREEN, plan=str(DEFAULT_PLAN), db=str(db))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2], env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["saved"] == "4.46"  # the column the calculus fills after the first frame is filled
    assert seen["first screen"] == [], seen["first screen"]
    assert seen["history"] == "julia_port: nothing to measure (decided by criteria or by hand)"
    assert seen["history tab"] == []
    # each is loaded where it first opens, and what it opened is on screen (the waits above)
    assert "optseq.console.tui.screens.help" in seen["help"] and "textual.widgets._markdown" in seen["help"]
    assert "optseq.console.tui.dialogs.criterion" in seen["criterion dialog"]
    assert "optseq.console.tui.dialogs.export_path" in seen["export dialog"]
    assert "optseq.state.report.target" in seen["export dialog"]
    # and still none of what no screen of the console needs
    heavy = {"optseq.engine", "torch", "scipy", "matplotlib", "textual_serve", "aiohttp", "optseq.console.tui.serve"}
    assert not [m for m in seen["export dialog"] if m.split(".")[0] in heavy or m in heavy
                or m.startswith("optseq.engine.")]


def test_status_imports_neither_textual_nor_the_console(db):
    # nor, on a store that exists, the lever machines (transitions, with logging and six), nor what only a
    # writer needs (socket for the holder's host, tempfile for a file it replaces), nor another command's module:
    # the command line builds the parser of the command given alone (compare's and export's live in their modules);
    # nor shutil (with bz2 and lzma): argparse's formatters ask the width only for a help or an error, and the table
    # only of a terminal; nor the sequencer's parts that act or start runs (built at their first use); nor hashlib,
    # which loads OpenSSL: the short keys hashed on every start take CPython's own sha256 (state/sha.py); nor
    # dataclasses: the lever machine's models are plain classes (lifecycle/states.py, board.py); nor
    # typing_extensions with inspect, dis and ast, which msgspec loads only for a get_type_hints that is typing's own
    # from Python 3.11 on (state/__init__.py); nor what only an error or a writer needs: the plan's key lines
    # (plan/lines.py, with its patterns), glob (a dead writer's temp files)
    said = _after_status(db, "import sys\n", "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'torch', 'scipy', "
            "'transitions', 'logging', 'six', 'socket', 'tempfile', 'shutil', 'bz2', 'lzma', 'hashlib', '_hashlib', 'dataclasses', "
            "'typing_extensions', 'inspect', 'dis', 'ast', 'glob') "
            "or m.startswith(('optseq.console.tui.app', 'optseq.console.tui.screens', 'optseq.console.tui.widgets', "
            "'optseq.state.report', 'optseq.state.runners.groups', 'optseq.engine', 'optseq.state.actions', "
            "'optseq.state.lever_runs', 'optseq.state.plan.lines', "
            "'optseq.console.commands.compare_cmd', 'optseq.console.commands.export_cmd', "
            "'optseq.console.commands.outputs'))), code)\n")
    assert said == "[] 0"


def test_status_compiles_the_escapes_pattern_only_for_a_text_with_a_control_in_it(db):
    # the terminal's escapes pattern took 5M instructions to compile, on every start; what status prints has none
    said = _after_status(db, "from optseq.state import text\n",
                         "before = text._escapes.cache_info().currsize\n"
                         "said = text.terminal_safe('a \\x1b]0;title\\x07b\\x1b[2Jc')\n"
                         "print(before, text._escapes.cache_info().currsize, repr(said), code)\n")
    assert said == "0 1 'a bc' 0"


def _after_status(db: Path, imports: str, then: str) -> str:
    """The last line `then` prints in a fresh python that ran `optseq status` on a store at `db` (its exit code as
    `code`), `imports` run first."""
    _make_store(db)
    code = (f"{imports}from optseq.console.cli import main\n"
            f"code = main(['status', '--plan', {str(DEFAULT_PLAN)!r}, '--db', {str(db)!r}])\n{then}")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2], env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def _env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_PLAN", "OPTSEQ_DB")}
    env["TEXTUAL_ANIMATIONS"] = "none"
    return env


def test_the_store_shapes_carry_their_types_as_objects():
    # every open checks the hot file against these Structs, and decodes its meta, the snapshot's levers and the run
    # index into the others: msgspec evaluated each string annotation through typing at the first decode of a process
    # (10M instructions of status's 373M for the shapes, 7M of 332M for the rest), so they are objects, not strings
    import msgspec

    from optseq.state import record_types
    from optseq.state.lifecycle import lever_records, run_index, snapshot
    from optseq.state.store import rows, shapes

    structs = [v for m in (shapes, rows, record_types, lever_records, run_index, snapshot) for v in vars(m).values()
               if isinstance(v, type) and issubclass(v, msgspec.Struct) and v.__module__ == m.__name__]
    assert len(structs) > 40
    strings = [(s.__name__, k) for s in structs for k, v in s.__annotations__.items() if isinstance(v, str)]
    assert strings == [("Run", "summary")]  # the one forward reference (Summary is defined below Run)
