"""The seed story, in the console alone: the Julia gate decided by its last criterion, Option B's plan doc
created and its run streamed to an adopt, the model size chosen by hand among the configs its run measured,
and the doc exported. The seed's plan as it ships; only the two benches are stand-ins that speak the run
protocol as theirs do (the real ones take minutes here), so the story is the console's, not the engine's."""
from __future__ import annotations

import json
import re
from pathlib import Path

from optseq.console.tui.app import make_app
from optseq.console.tui.dialogs.confirm import ConfirmDialog
from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import SIZE, TINY_LEVER, cell, run, select_lever, stored, until, view  # noqa: F401
from tests.console.test_app import _steady_env  # noqa: F401  the autouse fixture, here too

AB = Path(__file__).parents[1] / "state" / "lever_scripts" / "ab.py"


def story_plan(tmp_path: Path) -> Path:
    """configs/sequencing.toml with option_b and model_size measured by stand-ins."""
    text = DEFAULT_PLAN.read_text(encoding="utf-8")
    benches = {
        "option_b": ["python", str(TINY_LEVER), "--ratio", "4.8", "--metric", "advantage_samples_per_s",
                     "--quality", "sample_mismatches=0:0"],
        "model_size": ["python", str(AB), "--arms", "h16x2:1.0:0.9,h32x2:1.5:0.5,h64x3:2.5:0.45,h128x3:40.0:0.1"],
    }
    for lever, argv in benches.items():
        text, n = re.subn(rf'run = \["python", "-m", "optseq.engine.bench", "{lever}"\]', f"run = {json.dumps(argv)}",
                          text)
        assert n == 1, lever
    path = tmp_path / "sequencing.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_seed_story_walks_through_in_the_console_alone(tmp_path, db, monkeypatch):
    plan = story_plan(tmp_path)
    monkeypatch.chdir(tmp_path)  # the plan doc the console offers to create is written from here
    (tmp_path / "out").mkdir()

    async def go():
        app = make_app(plan, db, export_dir=tmp_path / "out")
        async with app.run_test(size=SIZE) as pilot:
            # 1. Torch.jl fails c4: the gate decides NO-GO on the spot, the port closes, Option B needs a plan
            await pilot.press("c")
            assert (app.screen.query_one("#candidate").value, app.screen.query_one("#criterion").value) == (
                "torch_jl", "c4")
            await pilot.press("enter", "f", "enter", "tab", *"0.8x of PyTorch", "enter")
            await until(pilot, lambda: cell(app, "julia_port", "state") == "decided NO-GO", what="the gate")
            assert cell(app, "port", "state") == "closed"
            # 2. Option B's plan doc does not exist: p offers it from a template, and marks it
            await select_lever(pilot, "option_b")
            await pilot.press("p", "enter")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the create question")
            await pilot.press("y")
            await until(pilot, lambda: cell(app, "option_b", "state") == "ready", what="option_b ready")
            assert (tmp_path / "docs" / "plans" / "option_b.md").is_file()
            assert app.main.query_one("#status").text == "next: option_b (n runs it)"
            # 3. n runs it, streaming, to an adopt; the model-size experiment opens
            await pilot.press("n")
            panel = app.main.panel

            def title() -> str:
                return str(panel.query_one("#run-title").render())

            await until(pilot, lambda: title().startswith("run #1 ") and not panel.running, what="option_b's run's end")
            assert title().startswith("run #1 succeeded: option_b: adopt"), title()
            await until(pilot, lambda: cell(app, "option_b", "state") == "adopted", what="the table to show the adopt")
            assert cell(app, "option_b", "estimate").startswith("4.")
            assert cell(app, "model_size", "state") == "ready"
            # 4. the experiment runs, then its config is chosen by hand among those it measured
            await select_lever(pilot, "model_size")
            await pilot.press("r")
            await until(pilot, lambda: title().startswith("run #2 ") and not panel.running, what="the experiment's end")
            assert title().startswith("run #2 succeeded: model_size"), title()
            await pilot.press("d")
            await until(pilot, lambda: type(app.screen).__name__ == "DecideDialog", what="the decide dialog")
            dialog = app.screen
            assert dialog.outcomes == ["h16x2", "h32x2", "h64x3", "h128x3", "defer"]
            await pilot.press("enter", *"h32", "enter")  # type-to-search in the list
            assert dialog.query_one("#outcome").value == "h32x2"
            await pilot.press("tab", *"cheapest within the margin at CI size", "enter")
            await until(pilot, lambda: app.screen is app.main, what="back to the table")
            assert cell(app, "model_size", "state") == "decided h32x2"
            assert cell(app, "amp", "state") == "ready"  # re-measured on the chosen model next
            # 5. the doc, exported and previewed
            await pilot.press("e", "enter")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")
            preview = app.screen
            assert preview.query_one("#export-doc")  # the doc is there as the screen is
        written = (tmp_path / "out" / "optimization-sequencing.md").read_text(encoding="utf-8")
        assert preview.markdown == written
        assert "h32x2" in written and "NO-GO" in written
        status, history = stored(plan, db)
        assert view(status, "option_b")["state"] == "stale"  # adopted on the smaller model: re-measured on the new one
        assert status["infra"]["model"]["name"] == "h32x2"
        assert [(d["lever"], d["outcome"], d["auto"]) for d in history["decisions"]][-1] == ("model_size", "h32x2",
                                                                                            False)

    run(go())
