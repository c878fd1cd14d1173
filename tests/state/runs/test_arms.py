"""Command-pair levers: a team's own benchmark, unchanged, measured in interleaved pairs by optseq itself."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from optseq.state.plan.model import PlanError
from optseq.state.plan.loader import load
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ

BENCH = Path(__file__).parents[1] / "lever_scripts" / "user_bench.py"
RULE = 'metric = "samples_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12'
REGEX = "metric = { name = \"samples_per_s\", regex = 'samples/s: ([0-9.]+)', unit = \"samples/s\" }"
LOSS_GUARD = "guards = [{ name = \"final_loss\", regex = 'final loss ([0-9.]+)', max_diff = 0.01 }]"


def plan(tmp_path: Path, arms: str, *, lever: str = "fast", extra: str = "", rule: str = RULE) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[plan]
title = "Command pairs"
as_of = 2026-12-01
lang = "en"

[[levers]]
id = "{lever}"
title = "FAST=1"
kind = "speedup"
timeout_s = 120
rule = {{ {rule} }}
[levers.arms]
{arms}
{extra}
""", encoding="utf-8")
    return path


def arms(style: str = "regex", metric: str = REGEX, more: str = "") -> str:
    return f'command = ["python", "{BENCH}", "--style", "{style}"]\ncandidate_env = {{ FAST = "1" }}\n{metric}\n{more}'


def run(path: Path, lever: str = "fast", env: dict | None = None):
    old = dict(os.environ)
    os.environ.update(env or {})
    logs: list[str] = []
    try:
        with Sequencer.open(path, path.parent / "db", mode="write") as seq:
            report = seq.run_lever(lever, on_log=logs.append)
            record = seq.store.get("runs", report.run_id)
            state = seq.machine.state(lever)
    finally:
        os.environ.clear()
        os.environ.update(old)
    samples = [json.loads(line) for line in Path(record["samples_file"]).read_text().splitlines()] \
        if record.get("samples_file") else []
    return report, record, state, samples, logs


def calls(tmp_path: Path) -> list[list[str]]:
    return [line.split() for line in (tmp_path / "calls.txt").read_text().splitlines()]


def test_a_script_that_prints_one_number_is_measured_and_adopted(tmp_path):
    report, record, state, samples, logs = run(plan(tmp_path, arms(more=LOSS_GUARD)),
                                               env={"CALLS": str(tmp_path / "calls.txt")})
    assert report.status == "succeeded" and report.verdict == "adopt" and state == "adopted"
    stats = report.summary["stats"]
    assert stats["n"] == 6 and stats["estimate"] == pytest.approx(2.0, rel=1e-3)
    # the last match of the regex wins (the script prints an earlier "samples/s: 1.0")
    assert sorted(s["value"] for s in samples if s["arm"] == "baseline") == [100 + i / 1000 for i in range(6)]
    assert {s["unit"] for s in samples} == {"samples/s"} and all(s["higher_is_better"] for s in samples)
    assert [g["name"] for g in report.summary["verdict"]["guards"]] == ["final_loss"]
    assert record["arms"]["candidate_env"] == {"FAST": "1"} and record["argv"][-1] == "optseq.engine.arms"
    assert any(line.startswith("[candidate pair 5] samples/s: 200.005") for line in logs)


def test_warm_ups_run_first_and_their_numbers_are_dropped(tmp_path):
    report, _, _, samples, _ = run(plan(tmp_path, arms(more="warmup = 2")), env={"CALLS": str(tmp_path / "calls.txt")})
    ran = calls(tmp_path)
    assert [c[:2] for c in ran[:4]] == [["baseline", "warmup-1"], ["candidate", "warmup-1"],
                                        ["baseline", "warmup-2"], ["candidate", "warmup-2"]]
    assert len(ran) == 4 + 12 and all(s["value"] < 1e9 for s in samples) and len(samples) == 12
    assert report.verdict == "adopt"


def test_alternate_order_is_counterbalanced_abba(tmp_path):
    run(plan(tmp_path, arms(more="warmup = 0")), env={"CALLS": str(tmp_path / "calls.txt")})
    firsts = [c[0] for c in calls(tmp_path)]
    assert firsts == ["baseline", "candidate", "candidate", "baseline"] * 3


def test_random_order_is_seeded_and_never_one_arm_then_the_other(tmp_path):
    rule = 'metric = "samples_per_s", min_speedup = 1.2, repeats = 24, max_repeats = 24'
    run(plan(tmp_path, arms(more='warmup = 0\norder = "random"'), rule=rule),
        env={"CALLS": str(tmp_path / "calls.txt")})
    ran = calls(tmp_path)
    firsts = [ran[2 * i][0] for i in range(24)]
    assert {firsts.count("baseline"), firsts.count("candidate")} != {0, 24}
    assert [c[1] for c in ran] == [str(i) for i in range(24) for _ in range(2)]  # both arms of a pair together
    halves = [c[0] for c in ran]
    assert halves[:24] != ["baseline"] * 24 and halves[:24] != ["candidate"] * 24


def test_candidate_env_reaches_the_candidate_only_and_an_adopted_toggle_joins_the_stack(tmp_path):
    path = plan(tmp_path, arms(more="warmup = 0"), extra=f"""
[[levers]]
id = "second"
title = "STACKED=1 on top"
kind = "speedup"
requires = "fast:decided"
timeout_s = 120
rule = {{ {RULE} }}
[levers.arms]
command = ["python", "{BENCH}"]
candidate_env = {{ STACKED = "1" }}
{REGEX}
warmup = 0
""")
    first, *_ = run(path, env={"CALLS": str(tmp_path / "calls.txt")})
    assert first.verdict == "adopt"
    assert {tuple(c[::2]) for c in calls(tmp_path)} == {("baseline", "FAST=0"), ("candidate", "FAST=1")}
    (tmp_path / "calls.txt").unlink()
    second, record, *_ = run(path, "second", env={"CALLS": str(tmp_path / "calls.txt")})
    # both arms of the later lever run on the adopted stack (FAST=1); only the candidate adds STACKED=1
    assert {tuple(c[::2][:1] + c[2:]) for c in calls(tmp_path)} == {("baseline", "FAST=1", "STACK=-"),
                                                                     ("candidate", "FAST=1", "STACK=1")}
    assert record["arms"]["stack_env"] == {"FAST": "1"} and record["infra"]["adopted"] == ["fast"]
    assert second.status == "succeeded"


def test_json_line_source_takes_the_last_line_holding_the_key(tmp_path):
    metric = 'metric = { name = "samples_per_s", json = "samples_per_s", unit = "samples/s" }'
    report, *_ = run(plan(tmp_path, arms("json", metric, "guards = [{ name = \"final_loss\", json = \"final_loss\", "
                                                         "max_diff = 0.01 }]")))
    assert report.verdict == "adopt" and report.summary["stats"]["estimate"] == pytest.approx(2.0, rel=1e-3)


def test_result_file_source_and_a_stale_file_is_refused(tmp_path):
    metric = 'metric = { name = "samples_per_s", file = "result.json", key = "metrics.samples_per_s", unit = "samples/s" }'
    report, *_ = run(plan(tmp_path, arms("file", metric)))
    assert report.verdict == "adopt"
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "result.json").write_text('{"metrics": {"samples_per_s": 5}}')
    os.utime(stale / "result.json", (1_000_000_000, 1_000_000_000))  # written long before any run
    report, record, *_ = run(plan(stale, arms("stale_file", metric)))
    assert report.status == "failed"
    assert record["detail"].startswith("baseline arm (warm-up 1): result file result.json is older than this run")
    assert "last output line: 'wrote the result file'" in record["detail"]


def test_wall_time_is_lower_is_better_in_seconds(tmp_path):
    report, _, _, samples, _ = run(plan(tmp_path, arms(metric='metric = { name = "samples_per_s", wall_time = true }')))
    assert report.status == "succeeded" and len(samples) >= 12
    assert {s["unit"] for s in samples} == {"s"} and not any(s["higher_is_better"] for s in samples)


def test_a_guard_read_by_regex_rejects_however_fast(tmp_path):
    report, _, state, _, _ = run(plan(tmp_path, arms(more=LOSS_GUARD)), env={"LOSS_SHIFT": "0.05"})
    assert report.verdict == "reject" and state == "rejected"
    assert "guard final_loss = 0.05" in report.message and "though" in report.message


def test_a_half_written_last_line_still_counts(tmp_path):
    report, *_ = run(plan(tmp_path, arms("halfline", more=LOSS_GUARD)))
    assert report.verdict == "adopt"


@pytest.mark.parametrize("style, arm, found", [
    ("silent", "baseline arm (warm-up 1): regex 'samples/s: ([0-9.]+)' matched nothing",
     "last output line: 'done training, throughput not printed'"),
    ("crash", "baseline arm (warm-up 1) exited 3", "last output line: 'CUDA error: out of memory'"),
])
def test_an_arm_without_its_number_fails_in_one_line_naming_arm_source_and_last_line(tmp_path, style, arm, found):
    report, record, state, samples, _ = run(plan(tmp_path, arms(style)))
    assert report.status == "failed" and report.exit_code == 1 and state == "ready" and not samples
    assert record["detail"].startswith(arm) and found in record["detail"] and "\n" not in record["detail"]
    assert record["passes"] == 1  # not relaunched


def test_a_hanging_arm_times_out_and_is_killed_with_the_driver(tmp_path):
    from tests.state.runners.test_runner import dead, wait_until

    path = plan(tmp_path, arms("hang"))
    # long enough for a loaded machine to start the arm, which then never ends: the verdict is timeout either way
    path.write_text(path.read_text().replace("timeout_s = 120", "timeout_s = 15"))
    report, record, *_ = run(path, env={"PIDFILE": str(tmp_path / "pids")})
    assert report.status == "timeout" and record["detail"].startswith("timed out after 15 s")
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()] if (tmp_path / "pids").exists() else []
    assert wait_until(lambda: all(dead(pid) for pid in pids))


def test_the_cli_runs_a_command_pair_lever_and_the_export_shows_it(tmp_path):
    path = plan(tmp_path, arms(more=LOSS_GUARD))
    env = {**os.environ, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(tmp_path / "db")}
    proc = subprocess.run([*OPTSEQ, "--run", "fast", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out, = json.loads(proc.stdout)["runs"]
    assert out["status"] == "succeeded" and out["verdict"] == "adopt" and out["decision"] == "adopt"
    export = subprocess.run([*OPTSEQ, "export", "--lang", "en"], env=env, capture_output=True, text=True, timeout=120)
    assert export.returncode == 0, export.stderr
    # decided, it has left the pending table for the status and the results
    assert "No lever is waiting for a decision." in export.stdout
    assert "- ✅ FAST=1: adopt 2.00× [2.00, 2.00]" in export.stdout
    assert "| FAST=1 | adopt | samples_per_s | 2.00× |" in export.stdout


@pytest.mark.parametrize("body, key, words", [
    (f'command = ["python", "b.py"]\n{REGEX}', "arms.candidate_args", "what tells the arms apart"),
    (f'command = ["a"]\nbaseline = ["b"]\ncandidate_env = {{ X = "1" }}\n{REGEX}', "arms.command", "not both"),
    (f'baseline = ["a"]\n{REGEX}', "arms.candidate", "missing"),
    ('command = ["a"]\ncandidate_env = { X = "1" }\nmetric = { regex = "rate: [0-9]+" }', "arms.metric.regex",
     "has no group"),
    ('command = ["a"]\ncandidate_env = { X = "1" }\nmetric = { regex = "(", json = "k" }', "arms.metric",
     "one source"),
    (f'command = ["a"]\ncandidate_env = {{ X = "1" }}\n{REGEX}\norder = "ab"', "arms.order", "never all of one arm"),
    ('command = ["a"]\ncandidate_env = { X = "1" }\nmetric = { name = "rate", wall_time = true }', "arms.metric.name",
     "not the rule's metric"),
    (f'command = ["a"]\ncandidate_env = {{ OPTSEQ_PASS = "1" }}\n{REGEX}', "arms.candidate_env.OPTSEQ_PASS",
     "optseq's own"),
    (f'command = "python b.py"\ncandidate_env = {{ X = "1" }}\n{REGEX}', "arms.command", "list of strings"),
    (f'command = ["a"]\ncandidate_env = {{ X = "1" }}\n{REGEX}\nguards = [{{ name = "g", regex = "(x)" }}]',
     "arms.guards[0]", "one bound"),
    (f'command = ["a"]\ncandidate_env = {{ X = "1" }}\n{REGEX}\ncwd = "nowhere"', "arms.cwd", "not a directory"),
])
def test_a_bad_arms_table_is_one_line_naming_the_key(tmp_path, body, key, words):
    with pytest.raises(PlanError) as err:
        load(plan(tmp_path, body))
    assert f"levers.fast.{key}: " in str(err.value) and words in str(err.value), str(err.value)


def test_arms_and_run_together_are_refused(tmp_path):
    path = plan(tmp_path, arms())
    path.write_text(path.read_text().replace('timeout_s = 120', 'timeout_s = 120\nrun = ["python", "x.py"]'))
    with pytest.raises(PlanError, match=r"levers\.fast\.run: .*give run or arms, not both"):
        load(path)


def test_the_console_runs_a_command_pair_lever_and_streams_its_arms(tmp_path, monkeypatch):
    import asyncio

    from optseq.console.tui.app import make_app
    from tests.console.test_app import until

    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    path = plan(tmp_path, arms(more=LOSS_GUARD))

    async def go():
        app = make_app(path, tmp_path / "db")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("r")
            panel = app.main.panel
            await until(pilot, lambda: not panel.running, what="the run to finish")
            await pilot.pause()
            assert str(panel.query_one("#run-title").render()).startswith("run #1 succeeded: fast: adopt")
            log = panel.query_one("#run-log")
            assert any(line.startswith("[candidate pair 0] samples/s: 200.000") for line in log.lines)
            assert str(panel.query_one("#run-samples").render()).startswith("samples: 12 (6 pairs)")
            assert app.main.query_one("#levers").cell_text("fast", "state") == "adopted"
            detail = app.main.query_one("#detail-view").plain
            assert "arms: python " in detail and "candidate adds FAST=1; samples_per_s from regex" in detail

    asyncio.run(go())


def test_two_levers_over_one_script_share_its_code_hash_and_an_edit_flags_the_older_numbers(tmp_path):
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH.read_text())
    two = f"""
[[levers]]
id = "second"
title = "STACKED=1"
kind = "speedup"
timeout_s = 120
rule = {{ {RULE} }}
[levers.arms]
command = ["python", "bench.py"]
candidate_env = {{ STACKED = "1", FAST = "1" }}
{REGEX}
warmup = 0
"""
    path = plan(tmp_path, f'command = ["python", "bench.py"]\ncandidate_env = {{ FAST = "1" }}\n{REGEX}\nwarmup = 0',
                extra=two)

    def warnings(lever: str) -> list[str]:
        with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
            return next(v for v in seq.views.status().levers if v.id == lever).warnings

    run(path, "fast")
    run(path, "second")
    assert warnings("fast") == [] and warnings("second") == []
    bench.write_text(bench.read_text() + "\n# tuned\n")
    run(path, "second")
    assert warnings("fast")[0].startswith("workload code changed since run 1") and warnings("second") == []
