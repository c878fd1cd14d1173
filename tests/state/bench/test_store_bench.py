"""The store bench: its stores hold what real runs write, its section keeps the others, its command writes a table.

No timing is asserted: the figures depend on the machine.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.bench import store_build, store_doc, store_measure
from optseq.state.sequencer import Sequencer
from optseq.state.store.store import Store
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.console.test_hangup import _gone
from tests.state.one_lever import one_lever_plan

# on one parallel worker (make test runs pytest -n): its bench run is built once
pytestmark = pytest.mark.xdist_group("store_bench")

AB = Path(__file__).parents[1] / "lever_scripts" / "ab.py"
RUNS = 30
VOLATILE = {"at", "started", "ended", "pid", "samples_file", "log"}
"""Fields that differ between two builds of the same history: times, the builder's pid, paths."""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    db = tmp_path_factory.mktemp("bench") / "state"
    info = store_build.build_store(DEFAULT_PLAN, db, RUNS)
    return db, info


def real_run(tmp_path: Path) -> dict:
    """One real lever run (a stand-in command, not the engine) with its records, for the shapes to compare."""
    plan = one_lever_plan(tmp_path, ["python", str(AB), "--ratio", "1.5", "--guard", "mism=0:0"], title="Shapes",
                          rule='metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12, '
                               'guards = [{ name = "mism", max = 0 }]')
    with Sequencer.open(plan, tmp_path / "real", mode="write") as seq:
        report = seq.run_lever("lever")
        assert report.decision == "adopt"
        return {"run": seq.store.get("runs", report.run_id), "decision": seq.store.all("decisions")[-1]}


def test_built_runs_have_the_shapes_a_real_run_writes(built, tmp_path):
    db, info = built
    real = real_run(tmp_path)
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        assert seq.held.warnings == []
        runs = seq.store.all("runs")
        decisions = seq.store.all("decisions")
    assert len(runs) == info.runs == RUNS
    assert {r["lever"] for r in runs} == set(store_build.LEVERS)
    for run in runs:
        assert set(run) == set(real["run"]), run["id"]
        assert set(run["summary"]) == set(real["run"]["summary"])
        assert set(run["summary"]["stats"]) == set(real["run"]["summary"]["stats"])
        assert set(run["summary"]["verdict"]) == set(real["run"]["summary"]["verdict"])
        assert set(run["fingerprint"]) == set(real["run"]["fingerprint"])
        assert run["status"] == "succeeded" and run["verdict"] == run["summary"]["verdict"]["outcome"]
        assert run["argv"] == list(seq.plan.lever(run["lever"]).run)
        assert run["lever"] not in run["infra"]["adopted"]  # the baseline is the stack without the lever
        stats = run["summary"]["stats"]
        assert len(stats["ratios"]) == stats["n"] >= 6
        assert [c["pass"] for c in run["pass_counts"]] == list(range(1, run["passes"] + 1))
        assert all(set(c) == set(real["run"]["pass_counts"][0]) for c in run["pass_counts"])
        samples = Path(run["samples_file"]).read_text(encoding="utf-8").splitlines()
        assert len(samples) == run["n_samples"] and json.loads(samples[0])["event"] == "sample"
        assert {json.loads(s)["run"] for s in samples} == set(range(1, run["passes"] + 1))
        for n in range(1, run["passes"] + 1):
            assert (db / "runs" / str(run["id"]) / f"pass-{n}.log").is_file()
        assert Path(run["log"]) == db / "runs" / str(run["id"]) / f"pass-{run['passes']}.log"
    mean_ratios = sum(len(r["summary"]["stats"]["ratios"]) for r in runs) / len(runs)
    assert 12 <= mean_ratios <= 21  # 6 launches of up to 3 pairs each fill the plan's 18, and a 7th
    assert any(r["warnings"] for r in runs)  # the repeated samples, warned as a real run warns

    auto = [d for d in decisions if d["auto"] and d["rule"] != "criteria"]
    decided = [r for r in runs if r["verdict"] in ("adopt", "reject")]
    assert [d["runs"] for d in auto] == [[r["id"]] for r in decided]
    for d in auto:
        assert set(d) == set(real["decision"])
        run = next(r for r in runs if r["id"] == d["runs"][0])
        assert d["outcome"] == run["verdict"] and d["stats"] == run["summary"]["stats"]
    for lever in store_build.LEVERS:  # each lever's decisions alternate
        outcomes = [d["outcome"] for d in auto if d["lever"] == lever]
        assert len(outcomes) >= 4 and all(a != b for a, b in zip(outcomes, outcomes[1:])), (lever, outcomes)
    assert info.verdicts["inconclusive"] == RUNS // 10


def test_built_store_holds_the_gate_the_plan_and_the_derived_events(built):
    db, _ = built
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        status = seq.views.status()
        events = seq.store.all("events")
        criteria = seq.store.all("criteria")
        decisions = seq.store.all("decisions")
        snapshot = {r["lever"]: r["state"] for r in seq.store.all("levers")}
    assert [(c["lever"], c["candidate"], c["criterion"], c["outcome"]) for c in criteria] == [
        ("julia_port", "torch_jl", "c4", "fail")]
    assert decisions[0]["lever"] == "julia_port" and decisions[0]["outcome"] == "NO-GO" and decisions[0]["auto"]
    kinds = {e["type"] for e in events}
    assert {"plan", "decision_point", "stale", "superseded"} <= kinds
    assert all(e.get("derived") for e in events if e["type"] in ("stale", "superseded"))
    points = {e["point"] for e in events if e["type"] == "decision_point"}
    assert points == {"torch_jl_result", "option_b_plan"}
    views = {v.id: v for v in status.levers}
    assert views["port"].state == "closed" and views["model_size"].state == "ready"
    # a fresh replay reaches the states the builder's last snapshot recorded
    assert {lid: v.state for lid, v in views.items()} == snapshot


def test_the_building_shortcut_writes_what_the_exact_calls_write(tmp_path):
    def records(db: Path) -> dict:
        with Store.open(db, mode="read") as store:
            return {t: [{k: v for k, v in r.items() if k not in VOLATILE} for r in store.all(t)]
                    for t in ("runs", "decisions", "events", "criteria", "facts", "levers")}

    store_build.build_store(DEFAULT_PLAN, tmp_path / "exact", 20, exact=True, group=7)
    store_build.build_store(DEFAULT_PLAN, tmp_path / "fast", 20, group=7)
    assert records(tmp_path / "exact") == records(tmp_path / "fast")


def test_optseq_status_and_export_work_on_a_built_store(built, tmp_path):
    db, _ = built
    common = ["--plan", str(DEFAULT_PLAN), "--db", str(db)]
    out = subprocess.run([*OPTSEQ, "status", *common], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "cython_bot" in out.stdout and "option_a" in out.stdout
    status = json.loads(subprocess.run([*OPTSEQ, "status", "--json", *common], capture_output=True, text=True,
                                       timeout=120, check=True).stdout)
    assert status["next"] is not None and status["warnings"] == []
    target = tmp_path / "plan.md"
    out = subprocess.run([*OPTSEQ, "export", "-o", str(target), *common], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    text = target.read_text(encoding="utf-8")
    assert "Cython" in text and "Option B" in text


DOC = ("# Performance\n\n<!-- section:ci -->\nbench figures  \n<!-- /section:ci -->\n\n"
       "<!-- section:store -->\nold store table\n<!-- /section:store -->\n\n"
       "<!-- section:decisions -->\nsimulated\n<!-- /section:decisions -->\n")


def section(body: str) -> str:
    return f"<!-- section:store -->\n{body}\n<!-- /section:store -->"


def test_the_section_writer_replaces_its_own_section_and_keeps_the_others(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(DOC, encoding="utf-8")
    store_doc.write_section(doc, section("new table"))
    assert doc.read_text(encoding="utf-8") == DOC.replace("old store table", "new table")
    store_doc.write_section(doc, section("newer table"))
    assert doc.read_text(encoding="utf-8") == DOC.replace("old store table", "newer table")
    assert [p.name for p in tmp_path.iterdir()] == ["performance.md"]  # no temp file left


def test_the_section_writer_appends_where_the_section_is_missing(tmp_path):
    doc = tmp_path / "performance.md"
    other = "# Performance\n\n<!-- section:ci -->\nbench\n<!-- /section:ci -->"  # no final newline
    doc.write_text(other, encoding="utf-8")
    store_doc.write_section(doc, section("table"))
    assert doc.read_text(encoding="utf-8") == other + "\n\n" + section("table") + "\n"
    fresh = tmp_path / "new.md"
    store_doc.write_section(fresh, section("table"))
    assert fresh.read_text(encoding="utf-8") == "# Performance\n\n" + section("table") + "\n"


def test_the_section_writer_refuses_broken_markers(tmp_path):
    doc = tmp_path / "performance.md"
    broken = "# Performance\n\n<!-- section:store -->\nno end marker\n"
    doc.write_text(broken, encoding="utf-8")
    with pytest.raises(store_build.BenchError):
        store_doc.write_section(doc, section("table"))
    assert doc.read_text(encoding="utf-8") == broken


def test_the_command_writes_a_table_with_one_row_per_size(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n", encoding="utf-8")
    kept = tmp_path / "kept"

    def bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "optseq.state.bench.store", "--runs", "20", "--repeat", "1",
                               *args, "--write", str(doc)], capture_output=True, text=True, timeout=600,
                              cwd=store_measure.ROOT)

    out = bench("--keep", str(kept))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == f"wrote {doc}"
    # a kept store timed again without its build, said so in its row; a size never kept is refused in one line
    reused = bench("--reuse", str(kept))
    assert reused.returncode == 0 and "reusing the 20-run store" in reused.stderr, reused.stderr[-2000:]
    again = doc.read_text(encoding="utf-8")
    assert f"--reuse {kept}" in again and "| 20 | " in again and " | kept | " in again
    missing = subprocess.run([sys.executable, "-m", "optseq.state.bench.store", "--runs", "30", "--reuse", str(kept)],
                             capture_output=True, text=True, timeout=120, cwd=store_measure.ROOT)
    assert missing.returncode == 2 and missing.stderr.strip().endswith(
        f"--reuse {kept}: no store of 30 runs there (runs-30/optseq.json); build it with --keep"), missing.stderr
    out = bench()  # a third write replaces the section again
    assert out.returncode == 0, out.stderr[-2000:]
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n")
    assert text.count("<!-- section:store -->") == 1 and text.count("<!-- /section:store -->") == 1
    store = text[text.index("<!-- section:store -->"):]
    rows = [line for line in store.splitlines() if line.startswith("| ") and not line.startswith("| runs")]
    assert len(rows) == 2 and rows[0].startswith("| 20 | ") and rows[1].startswith("| 20 | ")
    assert len(rows[0].split(" | ")) == 15
    # the schema check's cost: the hot file's, and every journal line's beside json.loads and msgspec's parse
    assert len(rows[1].split(" | ")) == 8 and rows[1].endswith(" µs |") and "json.loads" in store
    assert "--runs 20 --repeat 1" in store and "tinydb" in store
    assert "Targets at 100,000 runs: not judged" in store


def row(runs: int, status_s: float, rss_mb: float, first_s: float = 0.15, runs_rss_mb: float | None = None) \
        -> store_measure.Row:
    return store_measure.Row(runs=runs, build_s=1.0, dir_bytes=10**6, dir_files=3, db_bytes=None, status_s=status_s,
                             fact_s=0.2, decide_s=0.2, runs_json_s=0.2, export_s=0.5, status_rss=int(rss_mb * 1e6),
                             set_fact_s=0.02, append_s=0.01, runs_first_s=first_s, runs_lever_s=0.1,
                             runs_rss=int((rss_mb if runs_rss_mb is None else runs_rss_mb) * 1e6))


def test_the_section_names_its_command_and_judges_the_targets():
    text = store_doc.render([row(100, 0.1, 20), row(100_000, 0.2, 24)], command=store_doc.MAKE_COMMAND, repeat=5,
                            startup_s=0.05, about="a CPU", when="today")
    assert ("Written by `make store-bench` (`python -m optseq.state.bench.store --write docs/performance.md`) on today; "
            "a CPU.") in text
    assert "| 100,000 | 1.0 MB (3) | — | 1.00 s | 0.20 s |" in text
    targets = next(line for line in text.splitlines() if line.startswith("Targets at 100,000 runs"))
    assert "not met" not in targets and targets.count(", met") == 6
    slow = store_doc.render([row(100, 0.1, 20), row(100_000, 4.5, 214, first_s=3.0, runs_rss_mb=900)],
                            command="python -m optseq.state.bench.store", repeat=5, startup_s=0.05, about="a CPU",
                            when="today")
    assert "Written by `python -m optseq.state.bench.store` on today" in slow
    assert "`status` ≤ 0.25 s: 4.50 s, **not met**" in slow and "20 → 214 MB (10.7×), **not met**" in slow
    assert "first `runs --json` record ≤ 0.30 s: 3.00 s, **not met**" in slow
    assert "`runs --json` RSS flat (≤ 1.25× the 100-run store's): 20 → 900 MB (45.0×), **not met**" in slow

def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


@pytest.mark.slow  # builds a small store, then times commands until its RSS probe runs
def test_a_stopped_bench_kills_the_command_it_was_timing_with_the_probes_child_and_writes_nothing(tmp_path):
    import signal
    import time

    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n", encoding="utf-8")
    bench = subprocess.Popen([sys.executable, "-m", "optseq.state.bench.store", "--runs", "20", "--repeat", "1",
                              "--write", str(doc)], cwd=store_measure.ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # the RSS probe (a python spawning the timed command) with its command under it: the bench's deepest point
        end, held = time.monotonic() + 600, []  # a guard against a hang, never a budget
        while not held:
            assert bench.poll() is None and time.monotonic() < end, "the bench never ran its RSS probe"
            held = [(probe, command) for probe in _children(bench.pid) if "posix_spawn" in _cmdline(probe)
                    for command in _children(probe)]
            time.sleep(0.01)
        (probe, command), = held
        os.kill(bench.pid, signal.SIGTERM)
        out, err = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.communicate()
    assert bench.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == "store bench: stopped (SIGTERM): nothing written"
    _gone([probe, command])
    assert doc.read_text(encoding="utf-8") == "# Performance\n"
