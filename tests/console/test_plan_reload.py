"""The console follows the plan file (issue 32, point 3): an edit that makes an adopted lever stale shows at once,
in the words `optseq status` gives; an edit that breaks the plan is a banner naming file, line and key while the
last good plan stays on screen, gone once the file is fixed. The store is made through the real CLI; the console
runs under Pilot at 80×24 and waits on what it shows, never on time."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from optseq.console.tui.app import make_app
from tests.conftest import OPTSEQ
from tests.console.test_app import SIZE, TINY_LEVER, cell, run, select_lever, until
from tests.console.test_app import _steady_env  # noqa: F401  the autouse fixture, here too

PLAN = f"""[plan]
title = "Followed plan"
as_of = 2026-12-04
lang = "en"

[[levers]]
id = "fast"
title = "Fast lever"
kind = "speedup"
plan_doc = "docs/fast.md"
run = ["python", "{TINY_LEVER}", "--ratio", "1.5", "--log-lines", "0"]
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}

[[levers]]
id = "later"
title = "Later lever"
kind = "speedup"
plan_doc = "docs/later.md"
run = ["python", "{TINY_LEVER}", "--ratio", "1.0", "--log-lines", "0"]
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
"""


def cli(plan: Path, db: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture
def adopted(tmp_path) -> tuple[Path, Path]:
    """A plan in tmp_path whose `fast` the real CLI measured and adopted."""
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(PLAN, encoding="utf-8")
    decided = json.loads(cli(plan, db, "--run", "fast", "--json").stdout)
    assert [r["decision"] for r in decided["runs"]] == ["adopt"]
    return plan, db


def edit(plan: Path, old: str, new: str) -> None:
    text = plan.read_text(encoding="utf-8")
    assert old in text
    plan.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(plan: Path, written: str) -> int:
    return plan.read_text(encoding="utf-8").splitlines().index(written) + 1


def banner(app):
    found = app.main.query("#plan-banner")
    return found.first() if found else None


def banner_shown(app) -> bool:
    b = banner(app)
    return b is not None and b.shown and b.region.height >= 1  # drawn, not only flagged


def detail(app) -> str:
    return app.main.query_one("#detail-view").plain


def status_of(plan: Path, db: Path, lever: str) -> dict:
    return next(v for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"] if v["id"] == lever)


def test_an_edit_that_stales_an_adoption_shows_at_once_as_status_says_it(adopted):
    plan, db = adopted

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "adopted", what="the adoption")
            edit(plan, "min_speedup = 1.2", "min_speedup = 1.3")  # fast's rule only: same size, same lever
            await until(pilot, lambda: cell(app, "fast", "state") == "stale adopt", what="the edit followed")
            cli_view = status_of(plan, db, "fast")
            reason = cli_view["stale_reason"]
            assert reason == "plan changed: fast's rule (since run 1)" and cli_view["state"] == "stale"
            assert cell(app, "fast", "stale") == "!" and cell(app, "fast", "why") == "r: re-measure"
            assert cell(app, "later", "state") == "ready"  # untouched by the edit
            assert f"stale\n  {reason}" in detail(app)  # fast is the selected row: its detail, status's words
            said = f"{plan} read again · fast stale: {reason}"
            await until(pilot, lambda: said in [n.message for n in app._notifications], what="what went stale")
            assert app.seq.plan.lever("fast").rule.min_speedup == 1.3  # what a run started now measures against
            assert not banner_shown(app)

    run(go())


def test_a_broken_edit_is_a_banner_naming_file_line_and_key_and_the_last_good_plan_stays(adopted):
    plan, db = adopted

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "adopted", what="the adoption")
            edit(plan, "min_speedup = 1.2", "min_speedup = 1.3")
            await until(pilot, lambda: cell(app, "fast", "state") == "stale adopt", what="the good edit")
            edit(plan, 'kind = "speedup"', 'kind = "speedupp"')
            await until(pilot, lambda: banner_shown(app), what="the banner")
            line = line_of(plan, 'kind = "speedupp"')
            shown = banner(app).text
            # the same one line the CLI gives for the file, with the line the key is written on
            refused = cli(plan, db, "validate", str(plan), code=2).stderr.removeprefix("optseq: ").strip()
            assert refused == (f"{plan}: levers.fast.kind: unknown kind 'speedupp' (did you mean 'speedup'?) (one "
                               f"of decision, infra, experiment, speedup) (line {line})")
            assert shown.startswith(refused) and "showing the last good plan" in shown
            # the last good plan: fast as edited first (stale), both rows, the rule read before the break
            assert cell(app, "fast", "state") == "stale adopt" and cell(app, "later", "state") == "ready"
            assert app.seq.plan.lever("fast").rule.min_speedup == 1.3
            edit(plan, 'kind = "speedupp"', 'kind = "speedup"')
            await until(pilot, lambda: not banner_shown(app), what="the banner gone")
            assert cell(app, "fast", "state") == "stale adopt"

    run(go())


def test_a_toml_syntax_error_names_its_line_and_a_fix_clears_it(adopted):
    plan, db = adopted

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "adopted", what="the adoption")
            edit(plan, 'title = "Later lever"', 'title = "Later lever')  # the string never closed
            await until(pilot, lambda: banner_shown(app), what="the banner")
            line = line_of(plan, 'title = "Later lever')
            shown = banner(app).text
            assert shown.startswith(f"{plan}: TOML syntax error: ") and f"(at line {line}, " in shown
            assert shown.split(" · ")[0].endswith(': title = "Later lever'), shown  # the key, as written there
            assert cell(app, "fast", "state") == "adopted" and cell(app, "later", "state") == "ready"
            edit(plan, 'title = "Later lever', 'title = "Later lever"')
            await until(pilot, lambda: not banner_shown(app), what="the banner gone")
            assert cell(app, "fast", "state") == "adopted"

    run(go())


def test_an_edit_while_a_lever_runs_is_read_once_the_run_ends(adopted, tmp_path, monkeypatch):
    plan, db = adopted
    hold = tmp_path / "let-go"
    monkeypatch.setenv("TINY_LEVER_HOLD", str(hold))  # the run waits after its first pair until the file exists

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "fast", "state") == "adopted", what="the adoption")
            await select_lever(pilot, "later")
            await pilot.press("r")
            await until(pilot, lambda: app.main.panel.running, what="later's run")
            edit(plan, "min_speedup = 1.2", "min_speedup = 1.3")  # fast's rule
            # the run goes on under the plan it started with (as `--run ready` reads an edit between levers)
            assert app.main.follow_plan() is False
            assert app.seq.plan.lever("fast").rule.min_speedup == 1.2 and cell(app, "fast", "state") == "adopted"
            said = f"{plan} changed on disk: read again once the run of later ends"
            await until(pilot, lambda: said in [n.message for n in app._notifications], what="the wait said")
            hold.touch()
            await until(pilot, lambda: not app.main.panel.running, what="later's run to end")
            await until(pilot, lambda: cell(app, "fast", "state") == "stale adopt", what="the edit read")
            assert app.seq.plan.lever("fast").rule.min_speedup == 1.3

    run(go())


def test_a_lever_added_to_the_plan_gets_its_row_and_its_palette_command(tmp_path, db):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: cell(app, "later", "state") == "ready", what="the first screen")
            added = PLAN.split("[[levers]]")[2].replace('"later"', '"third"').replace("Later lever", "Third lever")
            plan.write_text(PLAN + "\n[[levers]]" + added, encoding="utf-8")
            await until(pilot, lambda: "third" in app.main.query_one("#levers")._ids, what="the new row")
            assert cell(app, "third", "state") == "ready" and cell(app, "third", "title") == "Third lever"
            assert "Lever third" in [c.title for c in app.get_system_commands(app.main)]

    run(go())
