"""`--run ready --parallel N`: independent ready levers measured at the same time, each decided as it lands."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import OPTSEQ

TINY = Path(__file__).with_name("tiny_lever.py")
CEILING_S = 120.0


def plan(tmp_path: Path, runner: str = "") -> Path:
    levers = "".join(f"""
[[levers]]
id = "{name}"
title = "{name}"
kind = "speedup"
plan_doc = "docs/{name}.md"
run = {json.dumps(["python", str(TINY), "--ratio", "1.5"])}
timeout_s = 300
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
""" for name in ("left", "right")) + """
[[levers]]
id = "after"
title = "after both"
kind = "speedup"
plan_doc = "docs/after.md"
requires = ["left:decided", "right:decided"]
run = """ + json.dumps(["python", str(TINY), "--ratio", "1.5"]) + """
timeout_s = 300
rule = { metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }
"""
    path = tmp_path / "plan.toml"
    path.write_text(f'[plan]\ntitle = "Parallel"\nas_of = 2026-12-01\nlang = "en"\n{runner}\n{levers}')
    return path


def run_parallel(tmp_path: Path, path: Path, extra_env: dict | None = None,
                 said: list[str] | None = None) -> tuple[dict, list[int]]:
    """Both levers are held after their first pair until both have reached it: they ran at the same time.
    `said` gets optseq's stderr lines."""
    hold = tmp_path / "go"
    env = {**os.environ, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(tmp_path / "db"), "TINY_LEVER_HOLD": str(hold),
           **(extra_env or {})}
    proc = subprocess.Popen([*OPTSEQ, "--run", "ready", "--parallel", "2", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    logs = [tmp_path / "db" / "runs" / str(i) / "pass-1.log" for i in (1, 2)]
    end = time.monotonic() + CEILING_S
    while not all(log.exists() and '"pair": 0' in log.read_text(errors="replace") for log in logs):
        assert time.monotonic() < end and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.05)
    hold.touch()  # both are mid-run now; let them finish
    out, err = proc.communicate(timeout=CEILING_S * 2)
    assert proc.returncode == 0, err[-3000:]
    if said is not None:
        said.extend(err.splitlines())
    return json.loads(out), [json.loads(line)["pair"] for log in logs for line in log.read_text().splitlines()
                             if line.startswith('{"event": "sample"')][:1]


def test_two_ready_levers_run_at_once_and_the_lever_they_open_follows(tmp_path):
    said: list[str] = []
    out, _ = run_parallel(tmp_path, plan(tmp_path), said=said)
    runs = {r["lever"]: r for r in out["runs"]}
    # a line per progress event, each run's count cumulative over its pair budget and naming its launch:
    # 2 pairs a launch (max_repeats 12 // the 6 launches a decision needs)
    for lever in ("left", "right", "after"):
        assert f"{lever}: pair 2 of 12" in said and f"{lever}: pair 3 of 12 · launch 2" in said, said
    assert set(runs) == {"left", "right", "after"}
    assert all(r["status"] == "succeeded" and r["decision"] == "adopt" for r in runs.values())
    # after waited for both decisions, and ran on the stack both left
    from optseq.state.sequencer import Sequencer

    with Sequencer.open(tmp_path / "plan.toml", tmp_path / "db", mode="read") as seq:
        assert sorted(seq.store.get("runs", runs["after"]["run_id"])["infra"]["adopted"]) == ["left", "right"]
        assert sorted(seq.store.get("runs", runs["left"]["run_id"])["infra"]["adopted"]) == []


def test_parallel_is_refused_where_it_means_nothing(tmp_path):
    env = {**os.environ, "OPTSEQ_PLAN": str(plan(tmp_path)), "OPTSEQ_DB": str(tmp_path / "db")}
    for args, words in ((["--run", "left", "--parallel", "2"], "--parallel applies to --run ready, stale or watch"),
                        (["--run", "ready", "--parallel", "0"], "--parallel 0: expected 1 to 64")):
        proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=CEILING_S)
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr


def test_the_console_runs_ready_levers_at_once_with_a_row_each(tmp_path, monkeypatch):
    """R in the console: both ready levers held mid-run at once, a row each, then `after` joins as they land."""
    import asyncio

    from optseq.console.tui.app import make_app
    from tests.console.test_app import cell, until

    hold = tmp_path / "go"
    monkeypatch.setenv("TINY_LEVER_HOLD", str(hold))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    logs = [tmp_path / "db" / "runs" / str(i) / "pass-1.log" for i in (1, 2)]

    async def go():
        app = make_app(plan(tmp_path), tmp_path / "db", parallel=2)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("R")
            panel = app.main.panel
            await until(pilot, lambda: all(log.exists() and '"pair": 0' in log.read_text(errors="replace")
                                           for log in logs), what="both levers mid-run")
            await until(pilot, lambda: panel.running_levers == {"left", "right"}, what="two rows running")
            assert cell(app, "left", "state") == "running" and cell(app, "right", "state") == "running"
            rows = str(panel.query_one("#run-rows").render())
            assert "left: running" in rows and "right: running" in rows
            assert "2 running" in str(panel.query_one("#run-title").render())
            hold.touch()
            await until(pilot, lambda: not panel.running, what="the group to end")
            # the panel hears the group end before the screen redraws the table: wait for the table itself
            await until(pilot, lambda: [cell(app, lever, "state") for lever in ("left", "right", "after")]
                        == ["adopted"] * 3, what="the table to show all three adopted")
            rows = str(panel.query_one("#run-rows").render())
            assert all(f"{lever}: succeeded" in rows and "→ adopt" in rows for lever in ("left", "right", "after"))

    asyncio.run(go())


def test_x_during_a_parallel_group_cancels_the_selected_lever_alone(tmp_path, monkeypatch):
    import asyncio

    from optseq.console.tui.app import make_app
    from optseq.state.sequencer import Sequencer
    from tests.console.test_app import cell, select_lever, until

    hold = tmp_path / "go"
    monkeypatch.setenv("TINY_LEVER_HOLD", str(hold))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    path = plan(tmp_path)

    async def go():
        app = make_app(path, tmp_path / "db", parallel=2)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("R")
            panel = app.main.panel
            await until(pilot, lambda: panel.running_levers == {"left", "right"}, what="two rows running")
            await select_lever(pilot, "right")
            await pilot.press("x")
            await until(pilot, lambda: panel.running_levers == {"left"}, what="right cancelled, left going on")
            assert panel.running
            hold.touch()
            await until(pilot, lambda: not panel.running, what="the group to end")
            await until(pilot, lambda: cell(app, "left", "state") == "adopted", what="left adopted")

    asyncio.run(go())
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        runs = {r["lever"]: r["status"] for r in seq.store.all("runs")}
    assert runs == {"left": "succeeded", "right": "cancelled"}  # and `after`, gated on right, never started
