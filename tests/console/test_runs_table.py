"""`optseq runs` as a benchmarker's table, a failed last run in status and the console, and Ctrl-C's exit 130."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from optseq.console.tui.app import make_app
from optseq.console.commands.runs_cmd import RUN_COLUMNS
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ
from tests.console.test_app import SIZE, _steady_env, cell, run, select_lever, until  # noqa: F401

TINY_LEVER = Path(__file__).with_name("tiny_lever.py")
AB = Path(__file__).parents[1] / "state" / "lever_scripts" / "ab.py"

FLAKY = """\
import os, runpy, sys
# fails until the file named by its argument exists, then measures as tiny_lever does
if not os.path.exists(sys.argv[1]):
    print("no flag file: failing on purpose", flush=True)
    sys.exit(3)
sys.argv = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def lever(lever_id: str, argv: list[str], rule: str = "repeats = 6, max_repeats = 12") -> str:
    return f"""
[[levers]]
id = "{lever_id}"
title = "{lever_id.title()}"
kind = "speedup"
plan_doc = "docs/{lever_id}.md"
run = {json.dumps(argv)}
timeout_s = 120
rule = {{ metric = "items_per_s", min_speedup = 1.2, {rule} }}
"""


def write_plan(tmp_path: Path, *levers: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\ntitle = "Runs table"\nas_of = 2026-11-01\nlang = "en"\n' + "".join(levers),
                    encoding="utf-8")
    return path


def optseq(env: dict, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return proc


def table(text: str) -> list[dict[str, str]]:
    """The runs table's rows as {column: cell}, cut at the header's column starts."""
    lines = text.splitlines()
    header = lines[0]
    starts = [header.index(RUN_COLUMNS[0])] + [header.index("  " + c) + 2 for c in RUN_COLUMNS[1:]]
    starts[0] = 0
    rows = []
    for line in lines[1:]:
        if line.startswith(("decision ", "criterion ")):
            break
        ends = starts[1:] + [len(line)]
        rows.append({c: line[a:b].strip() for c, a, b in zip(RUN_COLUMNS, starts, ends)})
    return rows


def note_of(env: dict, lever_id: str) -> str:
    status = json.loads(optseq(env, "status", "--json").stdout)
    return next(v for v in status["levers"] if v["id"] == lever_id)["note"]


def test_runs_is_a_table_of_outcomes_figures_and_reasons(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("good", ["python", str(AB), "--ratio", "1.5"]),
                      lever("crash", ["python", str(AB), "--mode", "crash"]),
                      lever("straddle", ["python", str(AB), "--ratio", "1.2", "--noise", "0.05", "--straddle"],
                            rule="repeats = 4, max_repeats = 16"))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan), OPTSEQ_LOADAVG="0")
    optseq(env, "--run", "good")
    optseq(env, "--run", "crash", code=1)
    optseq(env, "--run", "straddle")
    text = optseq(env, "runs").stdout
    assert text.splitlines()[0].split() == " ".join(RUN_COLUMNS).split()
    good, crash, straddle = table(text)
    assert (good["run"], good["lever"], good["outcome"]) == ("1", "good", "adopt")
    assert good["ratio [95% CI]"].startswith("1.5") and good["ratio [95% CI]"].count("[") == 1
    assert good["pairs"] == "12 pairs in 6 launches" and good["time"].endswith(" s")
    base, _, cand = good["baseline → candidate: median (IQR)"].partition(" → ")
    assert base.startswith(("9", "10")) and cand.startswith(("14", "15")) and cand.endswith(" items/s")
    assert good["note"] == ""
    assert (crash["outcome"], crash["ratio [95% CI]"], crash["pairs"]) == ("failed", "-", "-")
    # the run's detail, and the error the command printed last
    assert crash["note"] == "exited 1: RuntimeError: simulated crash in the middle of the run"
    assert straddle["outcome"] == "inconclusive" and "×" in straddle["ratio [95% CI]"]
    assert "straddle 1.20×" in straddle["note"]
    assert [line for line in text.splitlines() if line.startswith("decision ")][0].startswith("decision    1  good")
    runs = json.loads(optseq(env, "runs", "--json").stdout)["runs"]  # the JSON is as it was, fields added
    assert [(r["id"], r["lever"], r["status"], r["verdict"]) for r in runs] == [
        (1, "good", "succeeded", "adopt"), (2, "crash", "failed", None), (3, "straddle", "succeeded", "inconclusive")]


def test_status_says_the_last_run_failed_until_a_run_or_decision_follows(tmp_path, cli_env):
    flaky, flag = tmp_path / "flaky.py", tmp_path / "flag"
    flaky.write_text(FLAKY, encoding="utf-8")
    plan = write_plan(tmp_path, lever("flaky", ["python", str(flaky), str(flag), str(TINY_LEVER)]),
                      lever("broken", ["python", str(AB), "--mode", "crash"]))
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    optseq(env, "--run", "flaky", code=1)
    assert note_of(env, "flaky") == "last run 1 failed: exited 3"
    row = next(line for line in optseq(env, "status").stdout.splitlines() if line.startswith("flaky "))
    assert row.split()[:2] == ["flaky", "ready"] and row.endswith("last run 1 failed: exited 3")
    flag.touch()
    optseq(env, "--run", "flaky")  # a later run supersedes it
    assert "last run" not in note_of(env, "flaky")
    optseq(env, "--run", "broken", code=1)
    assert note_of(env, "broken") == "last run 3 failed: exited 1"
    optseq(env, "decide", "broken", "reject", "--why", "it crashes; not worth fixing")  # so does a decision
    assert note_of(env, "broken") == ""


def test_the_console_shows_a_failed_last_run_and_a_noisy_one(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("good", ["python", str(AB), "--ratio", "1.5"]),
                      lever("broken", ["python", str(AB), "--mode", "crash"]))
    db = Path(cli_env["OPTSEQ_DB"])
    env = dict(cli_env, OPTSEQ_PLAN=str(plan), OPTSEQ_LOADAVG="1000")
    optseq(env, "--run", "good")
    optseq(env, "--run", "broken", code=1)

    async def go():
        app = make_app(plan, db)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert cell(app, "broken", "why") == "r: retry, last run 2 failed: exited 1"
            await select_lever(pilot, "broken")
            detail = app.main.query_one("#detail-view").plain
            assert "  #2  failed  " in detail and detail.split("  #2  failed  ")[1].split("\n")[0].endswith("exited 1")
            await select_lever(pilot, "good")
            await until(pilot, lambda: "#1  adopt" in app.main.query_one("#detail-view").plain)
            line = next(l for l in app.main.query_one("#detail-view").plain.splitlines() if "#1  adopt" in l)
            assert "baseline " in line and " → candidate " in line and "items/s" in line
            assert "12 pairs in 6 launches" in line and "noisy: load average 1000.0" in line

    run(go())


def test_ctrl_c_during_a_run_exits_130_and_records_it_cancelled(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("held", ["python", str(TINY_LEVER)]))
    db = Path(cli_env["OPTSEQ_DB"])
    # the lever stops after its first pair until a file that never appears: Ctrl-C finds it mid-run
    env = dict(cli_env, OPTSEQ_PLAN=str(plan), TINY_LEVER_HOLD=str(tmp_path / "never"))
    proc = subprocess.Popen([*OPTSEQ, "--run", "held"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        seen = []
        for line in proc.stderr:  # a line the run prints once its first pair is in
            seen.append(line)
            if "running estimate" in line:
                break
        assert any("running estimate" in line for line in seen), "".join(seen)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, "".join(seen) + err)
    assert "Ctrl-C: cancelling the run" in err and "Traceback" not in err
    assert out.startswith("run 1 held: cancelled")
    with Sequencer.open(plan, db, mode="read") as seq:
        record, = seq.store.all("runs")
    assert record["status"] == "cancelled" and record["ended"]


def test_a_runs_length_is_kept_on_the_monotonic_clock_and_its_cost_is_that(tmp_path, cli_env):
    from optseq.console.words.figures import duration_text
    from optseq.state.calculus.inputs import _run_hours
    from optseq.state.record_types import Run, as_

    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "tiny", "--json")
    run = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    assert isinstance(run["elapsed_s"], float) and 0 < run["elapsed_s"] < 300
    assert run["ended"] >= run["started"]
    # a clock set two days forward during a 10 s run: the stamps say 48 h, the run cost 10 s
    jumped = {**run, "started": "2026-12-01T10:00:00+00:00", "ended": "2026-12-03T10:00:10+00:00", "elapsed_s": 10.0}
    assert _run_hours(as_(Run, jumped)) == 10.0 / 3600 and duration_text(as_(Run, jumped)) == "10 s"
    # a run from before elapsed_s was kept: its stamps are all there is
    assert _run_hours(as_(Run, {k: v for k, v in jumped.items() if k != "elapsed_s"})) == 48 + 10 / 3600


def test_a_run_whose_folder_cannot_be_made_is_refused_and_not_recorded(tmp_path, cli_env, db):
    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "status")
    (db / "runs" / "1").write_text("not a folder")  # as a full or read-only disk would: run 1's folder cannot be made
    proc = optseq(env, "--run", "tiny", code=2)
    assert f"cannot create {db / 'runs' / '1'}" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(optseq(env, "runs", "--json").stdout)["runs"] == []  # no run left `interrupted`
    status = json.loads(optseq(env, "status", "--json").stdout)
    assert [v["state"] for v in status["levers"] if v["id"] == "tiny"] == ["ready"]


def test_a_re_attach_counts_the_runs_time_on_the_monotonic_clock(tmp_path, cli_env):
    from optseq.state.runs.run_pass import Resume

    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "tiny", "--json")
    run = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    assert 0 <= run["elapsed_at_pass"] <= run["elapsed_s"]  # the last pass started inside the run
    # the clock set two days forward since: a re-attach still gives the run the time it really had
    jumped = {**run, "started": "2026-11-29T10:00:00+00:00", "passes": 2}
    assert Resume.of(jumped).elapsed_s == run["elapsed_at_pass"]
    assert Resume.of({k: v for k, v in jumped.items() if k != "elapsed_at_pass"}).elapsed_s > 86400  # older runs


def test_figures_from_the_reference_workload_at_ci_size_say_so_wherever_they_show(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER), "--bench-size", "ci"]),
                      lever("team", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    optseq(env, "--run", "tiny")
    optseq(env, "--run", "team")
    status = json.loads(optseq(env, "status", "--json").stdout)
    views = {v["id"]: v for v in status["levers"]}
    assert views["tiny"]["decision"]["stats"]["bench_size"] == "ci"
    assert "figures from the reference workload at CI size" in views["tiny"]["note"]
    assert "CI size" not in views["team"]["note"]  # a team's own command says nothing of a size
    assert "figures from the reference workload at CI size" in optseq(env, "status").stdout
    export = optseq(env, "export", "--lang", "en").stdout
    tiny_rows = [line for line in export.splitlines() if "Tiny" in line and "×" in line]
    assert tiny_rows and all("(reference workload at CI size)" in line for line in tiny_rows), tiny_rows
    assert not [line for line in export.splitlines() if "Team" in line and "CI size" in line]
    assert "(참조 워크로드, CI 크기)" in optseq(env, "export", "--lang", "ko").stdout
    assumptions = json.loads(optseq(env, "whatif", "--json").stdout)["assumptions"]
    assert "tiny: S 1.51× is the reference workload's at CI size, not the plan's workload" in assumptions, assumptions


def test_run_next_while_another_process_runs_a_lever_says_that_it_waits_on_that_run(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("held", ["python", str(TINY_LEVER)]),
                      lever("after", ["python", str(TINY_LEVER)]) + 'requires = "held:adopt"\n')
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.Popen([*OPTSEQ, "--run", "held"], env=dict(env, TINY_LEVER_HOLD=str(tmp_path / "never")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:  # held after its first pair: the run is under way
            seen.append(line)
            if "running estimate" in line:
                break
        assert any("running estimate" in line for line in seen), "".join(seen)
        waiting = optseq(env, "--run", "next", code=3)
        assert "no lever can run while held runs (what it decides opens the next)" in waiting.stderr, waiting.stderr
    finally:
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)


GARBAGE_PROBE = """\
import gc, sys
from optseq.console.cli import main
found = []

class Out:  # stdout: counts the records, and at the document's end what the collector finds unreachable
    encoding, errors, records = "utf-8", "strict", 0

    def write(self, text):
        Out.records += text.count("\\n    {")
        if text.endswith("}\\n"):
            found.append(gc.collect())
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

sys.stdout = Out()
code = main(["runs", "--json", *sys.argv[1:]])
sys.stdout = sys.__stdout__
print(code, Out.records, found[0], gc.get_threshold()[0])
"""


def test_runs_json_leaves_no_garbage_piling_up_record_by_record(tmp_path):
    # each record's json.dumps(indent=2) leaves a cycle of closures (about 36 objects): with the collector off
    # for the whole command they stayed until exit, memory growing with the history (108 MB at 10,000 runs)
    from optseq.state.bench.store_build import build_store
    from tests.conftest import DEFAULT_PLAN

    db = tmp_path / "db"
    build_store(DEFAULT_PLAN, db, 100)
    probe = tmp_path / "probe.py"
    probe.write_text(GARBAGE_PROBE, encoding="utf-8")
    out = subprocess.run([OPTSEQ[0], str(probe), "--plan", str(DEFAULT_PLAN), "--db", str(db)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    code, records, unreachable, threshold = map(int, out.stdout.split())
    assert code == 0 and records > 250  # runs, decisions and events of 100 runs
    # what the collector has not reached yet is about one generation-0 threshold of allocations (where the last
    # collection fell depends on the history's bytes), plus what had survived into generation 1 before it became
    # garbage (726 against 700 seen once); piling up, it would be ~36 objects a record, ~10,000 here
    assert unreachable <= 2 * threshold, (unreachable, records, threshold)
