"""Progress of a run as the console and the headless CLI show it, idle Run tabs, and who may write a store."""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from optseq.console.commands import run_cmd
from optseq.console.tui.app import make_app
from optseq.state.runs.lever_run import RunControl
from optseq.state.runs.progress import RunProgress, p_text
from optseq.state.sequencer import Sequencer
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_app import (SIZE, TINY_LEVER, _steady_env, run, select_lever, stored, tiny_plan,  # noqa: F401
                                    until, view)


def edge_plan(tmp_path: Path, *args: str) -> Path:
    """One lever whose 1.205× sits just above its 1.2× threshold. Its launch is the unit: no run decides before
    6 launches, so pass 1 asks more; `repeats = 4, max_repeats = 12` asks min(4, 12 // 6) = 2 pairs a launch."""
    argv = json.dumps(["python", str(TINY_LEVER), "--ratio", "1.205", "--log-lines", "0", *args])
    path = tmp_path / "edge.toml"
    path.write_text(f"""[plan]
title = "Edge plan"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "edge"
title = "Edge"
kind = "speedup"
plan_doc = "docs/edge.md"
run = {argv}
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 4, max_repeats = 12 }}
""", encoding="utf-8")
    return path


def texts(app) -> tuple[str, str]:
    panel = app.main.panel
    return str(panel.query_one("#run-title").render()), str(panel.query_one("#run-progress-msg").render())


# -- the run panel -----------------------------------------------------------------------------------

def test_bar_counts_on_across_passes_against_the_whole_budget(tmp_path, db, monkeypatch):
    release = tmp_path / "release"
    monkeypatch.setenv("TINY_LEVER_HOLD", str(release))
    monkeypatch.setenv("TINY_LEVER_HOLD_PASS", "2")  # launch 1 runs through; launch 2 stops after each pair

    async def go():
        app = make_app(edge_plan(tmp_path), db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3", "r")
            bar = app.main.panel.query_one("#run-progress")
            seen: list[float] = []

            def in_launch_2() -> bool:
                seen.append(bar.progress)
                return "launch 2" in texts(app)[1]

            await until(pilot, in_launch_2, what="launch 2 under way")
            # launch 1 measured 2 pairs; launch 2's first pair is the 3rd of the run, against the rule's pair
            # budget of 12: not 1 of a fresh pass
            assert (bar.progress, bar.total) == (3, 12)
            assert texts(app)[1] == " pair 3 of 12 · launch 2"  # the lever's own "pair 1" only repeats it
            assert texts(app)[0] == "edge: running"
            release.touch()
            await until(pilot, lambda: not app.main.panel.running, what="the run to end")
            assert seen == sorted(seen)  # never backwards, as far as it was watched

    run(go())


def test_run_progress_is_cumulative_and_never_goes_back():
    counted = RunProgress(repeats=4, budget=12)
    for done in range(1, 5):
        counted.sample({"run": 1})
        counted.progress(done, 4)
    assert (counted.done, counted.total, counted.text()) == (4, 12, "pair 4 of 4 (budget 12)")
    counted.sample({"run": 2})  # a sample tagged with pass 2 starts it before its first progress line
    counted.progress(1, 3)
    assert (counted.done, counted.total, counted.text()) == (5, 12, "pair 5 of 7 (budget 12) · pass 2")
    counted.progress(0, 3)  # a command restarting its count mid-pass: a new pass, never a step back
    assert counted.done == 5
    # a command counting something else than pairs (iterations): the asked total so far, no budget
    other = RunProgress(repeats=4, budget=12)
    other.progress(50, 200)
    assert (other.done, other.total, other.text()) == (50, 200, "50/200")


def lever_spec(rule, kind: str = "speedup", **fields):
    """A plan's Lever around `rule`: what RunProgress.of and the headless Progress read (.rule, .kind, .arms)."""
    from optseq.state.plan.model import Lever

    return Lever(id="x", title="X", kind=kind, index=0, rule=rule, **fields)


def test_a_launch_runs_progress_names_its_launches_and_counts_over_the_pair_budget():
    from optseq.state.plan.model import Rule

    # repeats = 6, max_repeats = 12: 6 launches before any decision, so each first launch asks 12 // 6 = 2 pairs
    counted = RunProgress.of(lever_spec(Rule(metric="items_per_s", min_speedup=1.2, repeats=6, max_repeats=12)))
    assert (counted.repeats, counted.budget, counted.launches) == (2, 12, True)
    for done in range(1, 3):
        counted.sample({"run": 1})
        counted.progress(done, 2)
        assert counted.text() == f"pair {done} of 12"  # the first look: 6 launches of 2
    counted.sample({"run": 2})
    counted.progress(1, 2)
    assert (counted.done, counted.total, counted.text()) == (3, 12, "pair 3 of 12 · launch 2")


def test_a_command_pair_levers_progress_still_counts_passes_of_pairs():
    from optseq.state.plan.model import Rule
    from optseq.state.plan.workload import Arms, Source

    arms = Arms(baseline=("true",), candidate=("true",), metric="items_per_s", source=Source(kind="wall_time"))
    counted = RunProgress.of(lever_spec(Rule(metric="items_per_s", min_speedup=1.2, repeats=6, max_repeats=12),
                                        arms=arms))
    assert (counted.repeats, counted.budget, counted.launches) == (6, 12, False)  # pass 1 asks `repeats` pairs
    for done in range(1, 7):
        counted.sample({"run": 1})
        counted.progress(done, 6)
    counted.sample({"run": 2})
    counted.progress(1, 6)
    assert counted.text() == "pair 7 of 12 · pass 2"


def test_an_experiments_progress_runs_over_its_whole_block_budget():
    from optseq.state.plan.model import Rule

    # 3 blocks a pass, up to 12; the command counts 16 iterations a block (4 configs × 4)
    rule = Rule(metric="exploitability", choose="min:exploitability", repeats=3, max_repeats=12)
    counted = RunProgress.of(lever_spec(rule, kind="experiment"))
    counted.progress(48, 48)
    assert (counted.done, counted.total, counted.text()) == (48, 192, "step 48 of 192 (12 blocks)")  # not 48/48
    counted.sample({"run": 2})
    counted.progress(16, 48)
    assert (counted.done, counted.total, counted.text()) == (64, 192, "step 64 of 192 (12 blocks) · pass 2")
    blocks = RunProgress.of(lever_spec(rule, kind="experiment"))
    blocks.progress(2, 3)
    assert blocks.text() == "block 2 of 12"


def test_title_says_running_once_samples_arrived_before_any_progress(tmp_path, db, monkeypatch):
    release = tmp_path / "release"
    lever = tmp_path / "sampler.py"
    lever.write_text(
        "import json, os, time\n"
        "print(json.dumps({'event': 'sample', 'arm': 'baseline', 'metric': 'items_per_s', 'value': 1.0,"
        " 'pair': 0, 'higher_is_better': True}), flush=True)\n"
        f"while not os.path.exists({str(release)!r}):\n    time.sleep(0.01)\n", encoding="utf-8")
    plan = tmp_path / "sampler.toml"
    plan.write_text(f"""[plan]
title = "Sampler"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "sampler"
title = "Sampler"
kind = "speedup"
plan_doc = "docs/s.md"
run = {json.dumps(["python", str(lever)])}
timeout_s = 60
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 4, max_repeats = 12 }}
""", encoding="utf-8")

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3", "r")
            samples = app.main.panel.query_one("#run-samples")
            await until(pilot, lambda: str(samples.render()).startswith("samples: 1"), what="the sample")
            assert texts(app)[0] == "sampler: running"
            release.touch()
            await until(pilot, lambda: not app.main.panel.running, what="the run to end")

    run(go())


def test_idle_run_tab_is_still_and_says_what_the_store_holds(tmp_path, db):
    plan = tiny_plan(tmp_path)

    async def look(mode: str = "auto") -> tuple[str, bool, object]:
        app = make_app(plan, db, mode=mode)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")
            await pilot.pause()
            panel = app.main.panel
            return texts(app)[0], panel.query_one("#run-progress-row").display, app.main.panel

    title, bar_shown, _ = run(look())
    assert title == "no run in this store yet · r runs the selected lever, n the next one"
    assert not bar_shown  # no indeterminate `--%` animating on a tab where nothing runs
    with Sequencer.open(plan, db, mode="write") as seq:
        seq.run_lever("fast")
    title, bar_shown, _ = run(look())
    assert title.startswith("last run #1 fast succeeded ") and "1.5" in title
    assert title.endswith(" · r runs the selected lever, n the next one")
    assert not bar_shown
    title, _, _ = run(look("read"))
    assert title.startswith("last run #1 fast succeeded ")
    assert "r runs" not in title and title.endswith("read-only: this console cannot run levers")


# -- the headless run ----------------------------------------------------------------------------------

class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def drawn(stream: Tty) -> list[str]:
    """What the terminal would show at each redraw: the text after each erase-line."""
    return [part for part in stream.getvalue().split(run_cmd.CLEAR_LINE)]


def test_headless_bar_fits_the_terminal_and_leaves_nothing_behind(monkeypatch):
    from optseq.state.plan.model import Rule

    monkeypatch.setenv("COLUMNS", "80")
    stream = Tty()
    # repeats = 4, max_repeats = 12: each of the first launches asks min(4, 12 // 6) = 2 pairs
    spec = lever_spec(Rule(metric="items_per_s", min_speedup=1.2, repeats=4, max_repeats=12))
    bar = run_cmd.Progress(stream, "model_size_growth_hidden1024_layers6", lever_spec=spec)
    bar.event({"event": "estimate", "estimate": 1.234, "ci_low": 1.1, "ci_high": 1.4, "n": 3})
    for done in range(1, 3):
        bar._last = 0.0  # every redraw, not one per 50 ms
        bar.event({"event": "sample", "run": 1})
        bar.event({"event": "progress", "done": done, "total": 2, "msg": f"a long message for pair {done} " * 3})
    bar.event({"event": "sample", "run": 2})
    bar._last = 0.0
    bar.event({"event": "progress", "done": 1, "total": 2, "msg": "pair 1"})
    frames = [f for f in drawn(stream) if f]
    assert frames and all(len(f) <= 79 and "\n" not in f for f in frames)
    # the count goes on over launches, as in the console (the long id leaves no room for the message)
    assert "] pair 3 of 12 · laun" in frames[-1]
    assert stream.getvalue().count(run_cmd.CLEAR_LINE) == len(frames)  # every redraw erases the line first
    bar.close()
    assert stream.getvalue().endswith(run_cmd.CLEAR_LINE)  # no stale bar left under the summary
    # not a terminal: a line per progress event, in full
    plain = io.StringIO()
    lines = run_cmd.Progress(plain, "lever", lever_spec=spec)
    for run_no, done in ((1, 1), (1, 2), (2, 1)):
        lines.event({"event": "sample", "run": run_no})
        lines.event({"event": "progress", "done": done, "total": 2, "msg": f"pair {done}"})
    assert plain.getvalue().splitlines() == ["lever: pair 1 of 12", "lever: pair 2 of 12",
                                             "lever: pair 3 of 12 · launch 2"]


def test_ctrl_c_says_so_on_a_line_of_its_own(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    stream = Tty()
    bar = run_cmd.Progress(stream, "slow")
    bar.event({"event": "progress", "done": 1, "total": 6, "msg": "pair 1"})
    before = stream.getvalue()
    control = RunControl()
    run_cmd._interrupt(control)
    bar.close()
    said = stream.getvalue()[len(before):]
    # the bar is erased first, the message ends its line, and the bar comes back under it
    assert said.startswith(run_cmd.CLEAR_LINE + "slow: Ctrl-C: cancelling the run")
    assert "\n" in said
    assert control.cancelled


def test_headless_run_says_it_started_before_the_command_speaks(tmp_path, cli_env):
    plan = tiny_plan(tmp_path)
    done = subprocess.run([*OPTSEQ, "--plan", str(plan), "--run", "fast"], env=cli_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == ("fast: starting run (6 launches of up to 2 pairs before it can decide: "
                                           "its 12-pair budget, all at the first look)")
    assert " p=0.016 " in done.stdout  # p as the console's rule text writes it: two significant digits


def test_headless_verbose_echoes_the_commands_own_lines(tmp_path, cli_env):
    plan = tiny_plan(tmp_path)
    quiet = subprocess.run([*OPTSEQ, "--plan", str(plan), "--run", "fast"], env=cli_env, capture_output=True,
                           text=True, timeout=120)
    assert quiet.returncode == 0, quiet.stderr
    assert "tiny lever log line" not in quiet.stderr
    loud = subprocess.run([*OPTSEQ, "--plan", str(plan), "--run", "slow", "-v"], env=cli_env, capture_output=True,
                          text=True, timeout=120)
    assert loud.returncode == 0, loud.stderr
    lines = loud.stderr.splitlines()
    # every launch's own lines: 6 launches (the fewest that decide), 3 lines each
    assert [line for line in lines if "tiny lever log line" in line] == \
        [f"slow| tiny lever log line {i}" for _ in range(6) for i in range(3)]
    assert not any(line.startswith("slow| {") for line in lines)  # protocol events are read, not echoed
    refused = subprocess.run([*OPTSEQ, "--plan", str(plan), "status", "--verbose"], env=cli_env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


def test_refused_run_with_json_still_prints_a_json_object(cli_env):
    done = subprocess.run([*OPTSEQ, "--plan", str(DEFAULT_PLAN), "--run", "tensorrt", "--json"], env=cli_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    out = json.loads(done.stdout)
    assert out["target"] == "tensorrt" and out["runs"] == []
    assert out["refused"].startswith("tensorrt is blocked")
    assert "tensorrt is blocked" in done.stderr


@pytest.mark.parametrize("p, text", [(0.0625, "0.062"), (0.0156, "0.016"), (0.25, "0.25"), (0.0004, "<0.001"),
                                     (None, "-")])
def test_p_is_written_one_way(p, text):
    assert p_text(p) == text


# -- who writes the store ----------------------------------------------------------------------------

def test_two_consoles_on_one_store_both_write_and_see_each_other(tmp_path, db):
    """No console holds the store: each takes the lock per transaction, so neither is ever read-only."""
    plan = tiny_plan(tmp_path)

    async def go():
        first, second = make_app(plan, db), make_app(plan, db)
        async with first.run_test(size=SIZE) as one, second.run_test(size=SIZE) as two:
            assert not first.seq.readonly and not second.seq.readonly
            await one.press("3", "r")  # the first console runs `fast`
            await until(one, lambda: first.main.panel.last_report is not None, what="the first console's run")
            await until(two, lambda: second.main.query_one("#levers").cell_text("fast", "state") == "adopted",
                        what="the second console to follow the first's run")
            await select_lever(two, "chatty")
            await two.press("r")
            await until(two, lambda: second.main.panel.last_report is not None, what="the second console's run")
            await until(one, lambda: first.main.query_one("#levers").cell_text("chatty", "state") == "adopted",
                        what="the first console to follow the second's run")
        status, _ = stored(plan, db)
        assert view(status, "fast")["state"] == view(status, "chatty")["state"] == "adopted"

    run(go())


def test_read_only_console_takes_over_once_the_directory_is_writable(tmp_path, db, monkeypatch):
    plan = tiny_plan(tmp_path)
    with Sequencer.open(plan, db, mode="write"):
        pass  # the store exists
    import optseq.console.tui.app as app_mod
    import optseq.state.store.store as store_mod

    real = store_mod.os.access
    locked = {"on": True}

    def access(path, mode, *args, **kwargs):  # tests run as root, for whom chmod never bars writing
        if locked["on"] and Path(path) == Path(db):
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(store_mod.os, "access", access)
    monkeypatch.setattr(app_mod.os, "access", access)
    monkeypatch.setattr(app_mod, "TAKE_OVER_S", 0.1)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.seq.readonly and "read-only" in app.main.query_one("#status").text
            assert app.main.check_action("run_selected", ()) is not True
            locked["on"] = False
            await until(pilot, lambda: not app.seq.readonly, what="the console to take the store over")
            await pilot.pause()
            assert "read-only" not in app.main.query_one("#status").text
            assert app.main.check_action("run_selected", ()) is True
            await pilot.press("3")
            assert "r runs the selected lever" in texts(app)[0]

    run(go())


def test_the_sample_line_counts_pairs_from_one_as_the_progress_line_does():
    from optseq.console.tui.widgets.run_tally import Tally

    tally = Tally()
    for pair in range(6):  # the run protocol numbers pairs from 0
        for arm, value in (("baseline", 7438.0), ("candidate", 46960.0)):
            tally.add({"run": 1, "pair": pair, "arm": arm, "value": value, "unit": "samples/s"})
    assert tally.text() == "samples: 12 (6 pairs)  last: pair 6 candidate 4.696e+04 samples/s"
