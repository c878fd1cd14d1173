"""Lever runs end to end with small external scripts as lever commands (not the engine)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path


from optseq.state.runners import groups
from optseq.state.runs.run_pass import experiment_length
from optseq.state.sequencer import Sequencer
from optseq.state.view_types import Status, as_json
from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

AB = Path(__file__).parents[1] / "lever_scripts" / "ab.py"


def write_plan(tmp_path: Path, args: list[str], *, rule: str = "", timeout: float = 60, extra: str = "") -> Path:
    return one_lever_plan(tmp_path, ["python", str(AB), *args], timeout=timeout, extra=extra,
                          rule=rule or 'metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12')


def run_once(plan: Path, db: Path, lever: str = "lever"):
    events, logs = [], []
    with Sequencer.open(plan, db, mode="write") as seq:
        report = seq.run_lever(lever, on_event=events.append, on_log=logs.append)
        run = seq.store.get("runs", report.run_id)
        return report, run, seq.views.status(), events, logs


def lever_view(status: Status, lever: str = "lever") -> dict:
    """The lever as `optseq status --json` prints it."""
    return as_json(next(l for l in status.levers if l.id == lever))


def test_clear_speedup_is_adopted(tmp_path, db):
    report, run, status, events, _ = run_once(write_plan(tmp_path, ["--ratio", "1.5"]), db)
    assert report.status == "succeeded" and report.decision == "adopt"
    stats = report.summary["stats"]
    # the launch is the unit: a first look needs 6 of them; 12 pairs over 6 launches fit max_repeats = 12
    assert (stats["replicate"], stats["launches"], run["passes"]) == ("launch", 6, 6)
    assert stats["n"] == 12 and 1.4 < stats["estimate"] < 1.6 and stats["ci_low"] >= 1.2
    assert len(stats["units"]) == 6 and stats["above"] == 6 and 1.4 < stats["mean_ratio"] < 1.6
    assert lever_view(status)["state"] == "adopted"
    decision = lever_view(status)["decision"]
    assert decision["auto"] is True and decision["runs"] == [report.run_id]
    assert run["status"] == "succeeded" and run["fingerprint"]["device"] == "test-device"
    estimates = [e for e in events if e["event"] == "estimate"]
    assert [e["n"] for e in estimates] == list(range(1, 13))  # one per completed pair
    assert estimates[0]["ci_low"] is None and estimates[-1]["ci_low"] <= estimates[-1]["estimate"]
    samples = Path(run["samples_file"]).read_text().splitlines()
    assert len(samples) == 24


def test_a_budget_too_small_for_any_decision_is_refused_before_anything_runs(tmp_path, cli_env):
    # three launches of one pair: no sign test over launches decides with three
    plan = write_plan(tmp_path, ["--ratio", "1.5"], rule='metric = "items_per_s", min_speedup = 1.2, repeats = 1, '
                                                        'max_repeats = 3')
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr  # refused: nothing ran
    assert ("optseq: lever: its rule allows 3 launches (max_repeats = 3), too few for any decision: the test "
            "counts launches and needs 5 on one side at one look; raise max_repeats to at least 5") in proc.stderr
    runs = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                     timeout=60, check=True).stdout)["runs"]
    assert runs == []  # nothing was launched or stored


def test_clear_slowdown_is_rejected(tmp_path, db):
    report, _, status, _, _ = run_once(write_plan(tmp_path, ["--ratio", "0.7"]), db)
    assert report.decision == "reject" and lever_view(status)["state"] == "rejected"


def test_noise_around_threshold_extends_then_stays_inconclusive(tmp_path, db):
    plan = write_plan(tmp_path, ["--ratio", "1.2", "--noise", "0.05", "--straddle"],
                      rule='metric = "items_per_s", min_speedup = 1.2, repeats = 4, max_repeats = 16')
    report, run, status, _, logs = run_once(plan, db)
    assert report.status == "succeeded" and report.verdict == "inconclusive" and report.decision is None
    stats = report.summary["stats"]
    # launches until the pair budget is spent, each on the other side of the threshold from the one before; how
    # many pairs each took after the first two came from the costs measured, so the launches are not counted here
    assert stats["n"] == 16 and run["passes"] == stats["launches"] >= 6
    assert abs(stats["above"] - stats["below"]) <= 1 and stats["above"] + stats["below"] == stats["launches"]
    assert any("next launch" in line for line in logs)
    # what would settle it follows from the launches' sides and the estimate, their count from the costs measured
    from optseq.state.runs.launches import settle, share_above

    extra = settle(stats["above"], stats["below"], share=share_above(stats["units"], 1.2))
    assert (f"about {extra} more launch" if extra else "more would not likely settle it") in report.message
    view = lever_view(status)
    assert view["state"] == "measured" and view["decision"] is None


def test_failed_guard_rejects_even_when_faster(tmp_path, db):
    plan = write_plan(tmp_path, ["--ratio", "1.6", "--guard", "mismatches=3:0"],
                      rule='metric = "items_per_s", min_speedup = 1.2, repeats = 6, guards = [{ name = "mismatches", max = 0 }]')
    report, _, status, _, _ = run_once(plan, db)
    assert report.decision == "reject"
    assert "mismatches" in report.message
    assert lever_view(status)["state"] == "rejected"


def test_crash_fails_with_the_log_tail_stored(tmp_path, db):
    report, run, status, _, _ = run_once(write_plan(tmp_path, ["--ratio", "1.5", "--mode", "crash"]), db)
    assert report.status == "failed" and report.exit_code == 1
    assert any("simulated crash" in line for line in run["log_tail"])
    assert lever_view(status)["state"] == "ready" and lever_view(status)["decision"] is None
    assert "simulated crash" in Path(run["log"]).read_text()


def test_exit_zero_without_done_is_a_failure(tmp_path, db):
    report, _, _, _, _ = run_once(write_plan(tmp_path, ["--ratio", "1.5", "--mode", "nodone"]), db)
    assert report.status == "failed" and "without a done" in report.message


def test_hang_times_out_and_the_group_is_gone(tmp_path, db):
    report, run, status, _, _ = run_once(write_plan(tmp_path, ["--mode", "hang"], timeout=1.5), db)
    assert report.status == "timeout" and report.exit_code == 1
    assert not groups.group_alive(run["pgid"])
    assert lever_view(status)["state"] == "ready"


def test_unavailable_is_recorded_and_the_lever_stays_ready(tmp_path, db):
    report, run, status, _, _ = run_once(write_plan(tmp_path, ["--mode", "unavailable"]), db)
    assert report.status == "unavailable" and report.exit_code == 3
    assert run["reason"] == "needs a device this machine lacks"
    assert lever_view(status)["state"] == "ready"


def test_garbage_lines_are_log_not_a_crash(tmp_path, db):
    report, run, _, _, _ = run_once(write_plan(tmp_path, ["--ratio", "1.5", "--mode", "garbage"]), db)
    assert report.status == "succeeded" and report.decision == "adopt"
    log = Path(run["log"]).read_bytes()
    assert b'"val' in log and b"[1, 2, 3]" in log


def experiment_plan(tmp_path: Path) -> Path:
    """One experiment lever over three configs; the best (h1024x6) costs 30× the cheapest."""
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[plan]
title = "Experiment"
as_of = 2026-11-01

[[levers]]
id = "size"
title = "Model size"
kind = "experiment"
plan_doc = "p.md"
run = {json.dumps(["python", str(AB), "--arms", "h64x3:1.0:0.9,h256x4:2.0:0.5,h1024x6:30.0:0.1"])}
rule = {{ metric = "exploitability", choose = "min:exploitability", cost_metric = "s_per_iter", max_cost_ratio = 8.0 }}
""", encoding="utf-8")
    return plan


def test_experiment_chooses_an_arm_that_joins_the_infra(tmp_path, db):
    plan = experiment_plan(tmp_path)
    report, _, status, _, logs = run_once(plan, db, "size")
    assert report.decision == "h256x4"  # h1024x6 is best but costs 30x the cheapest arm
    # its length, said before it starts: the rule's blocks and, with no run of it yet, when it will know more
    assert logs[0] == ("[optseq] 5 blocks before it can decide, up to 20; its length is said after the first block "
                       "(within its timeout of 15 min); to choose without waiting, decide it by hand (optseq "
                       "decide size CONFIG --why …, or d in the console)")
    with Sequencer.open(plan, db, mode="read") as seq:
        again = experiment_length(seq.held.lever("size"), seq.machine.runs.recent["size"])
    assert again.startswith(f"[optseq] 5 blocks before it can decide, up to 20; run {report.run_id} took ")
    assert " a block: ≈ " in again and ", up to " in again
    assert status.infra["model"] == {"name": "h256x4", "hidden": 256, "layers": 4}
    assert lever_view(status, "size")["state"] == "decided"


def test_an_experiment_is_decided_by_hand_only_to_a_config_its_runs_measured(tmp_path, cli_env):
    plan = experiment_plan(tmp_path)
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))

    def decide(outcome: str, code: int, *extra: str) -> str:
        proc = subprocess.run([*OPTSEQ, "decide", "size", outcome, "--why", "by hand", *extra], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == code and "Traceback" not in proc.stderr, (proc.stdout, proc.stderr)
        return (proc.stdout + proc.stderr).strip()

    assert decide("h99x9", 2) == ("optseq: size: unknown config 'h99x9' (no run of size has measured a config "
                                  "yet: run it to choose one, or defer; --unmeasured takes a config measured elsewhere)")
    run = subprocess.run([*OPTSEQ, "--run", "size"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    # its expected length, said once its first block is in (5 blocks first, up to 20: the rule's defaults)
    paced = [line for line in run.stderr.splitlines() if "the first block took" in line]
    assert len(paced) == 1 and paced[0].startswith("size: the first block took "), run.stderr
    assert ": 5 blocks before it can decide ≈ " in paced[0] and ", up to 20 ≈ " in paced[0]
    assert paced[0].endswith("decide it by hand (optseq decide size CONFIG --why …, or d in the console)")
    assert decide("h99x9", 2) == ("optseq: size: unknown config 'h99x9' (its runs measured h64x3, h256x4, "
                                  "h1024x6; or defer; --unmeasured takes a config measured elsewhere)")
    assert decide("H64X3", 0) == "size decided h64x3 (manual)"  # any case, stored as the bench spells it
    # a config measured elsewhere (say on the GPU machine), said so; a name no config can have is still refused
    assert decide("h2048x8", 0, "--unmeasured") == "size decided h2048x8 (manual)"
    assert decide("h 1;x", 2, "--unmeasured") == "optseq: size: 'h 1;x' cannot name a config (letters, digits, '.', '_', '-')"
    status = json.loads(subprocess.run([*OPTSEQ, "status", "--json"], env=env, capture_output=True, text=True,
                                       timeout=120).stdout)
    assert status["infra"]["model"]["name"] == "h2048x8"


def test_device_change_makes_earlier_numbers_stale(tmp_path, db):
    plan = write_plan(tmp_path, ["--ratio", "1.5"])
    run_once(plan, db)
    with Sequencer.open(plan, db, mode="write") as seq:
        run = seq.store.all("runs")[-1]
        seq.actions.mark_stack_changes(run["id"] + 1000, {**run["fingerprint"], "device": "NVIDIA H200"})
        view = lever_view(seq.views.status())
    assert view["state"] == "stale" and "device changed" in view["stale_reason"]


def test_cli_run_summary_json_and_exit_codes(tmp_path, cli_env):
    plan = write_plan(tmp_path, ["--ratio", "1.5"])
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["runs"][0]["decision"] == "adopt"
    # plain progress lines when not on a terminal: the run's ask first, then a count over the rule's
    # whole budget (max_repeats), pass after pass: 6 launches of 2 pairs fill its 12
    lines = proc.stderr.splitlines()
    assert lines[0] == ("lever: starting run (6 launches of up to 2 pairs before it can decide: its 12-pair budget, "
                        "all at the first look)")
    counts = [line for line in lines if line.startswith("lever: pair ")]
    assert counts == [f"lever: pair {i} of 12{f' · launch {(i + 1) // 2}' if i > 2 else ''}"
                      for i in range(1, 13)], proc.stderr
    assert summary["runs"][0]["summary"]["stats"]["launches"] == 6
    again = subprocess.run([*OPTSEQ, "--run", "next"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 3 and "nothing to run" in again.stderr


def test_cli_run_refuses_a_blocked_lever_with_its_reason(cli_env):
    proc = subprocess.run([*OPTSEQ, "--run", "option_b"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert "julia_port" in proc.stderr and "NO-GO" in proc.stderr and "Traceback" not in proc.stderr


def test_sigkill_during_a_run_leaves_it_interrupted_and_no_child(tmp_path, cli_env, db):
    plan = write_plan(tmp_path, ["--ratio", "1.5", "--pause", "0.5"],
                      rule='metric = "items_per_s", min_speedup = 1.2, repeats = 40, max_repeats = 40')
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.Popen([*OPTSEQ, "--run", "lever"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    child = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and child is None:
        time.sleep(0.2)
        try:
            with Sequencer.open(plan, db, mode="read") as reader:
                runs = reader.store.all("runs")
                child = runs[0].get("child_pid") if runs else None
        except Exception:
            continue
    assert child, "the run never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.1)
    assert not _alive(child), "the lever process outlived optseq"
    with Sequencer.open(plan, db, mode="write") as seq:
        run = seq.store.all("runs")[0]
        assert run["status"] == "interrupted"
        assert lever_view(seq.views.status())["state"] == "ready"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_the_lever_under_test_is_never_in_its_own_baseline(tmp_path, db):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, os\n"
        "infra = json.loads(os.environ['OPTSEQ_INFRA'])\n"
        "ratio = 1.0 if 'lever' in infra['adopted'] else 1.5\n"
        "for i in range(int(os.environ['OPTSEQ_REPEATS'])):\n"
        "    arms = [('baseline', 100.0), ('candidate', 100.0 * ratio * (1 + 0.001 * i))]\n"
        "    for arm, v in arms if (i + int(os.environ['OPTSEQ_PASS'])) % 2 else arms[::-1]:  # A B B A\n"
        "        print(json.dumps({'event': 'sample', 'arm': arm, 'metric': 'items_per_s', 'value': v,\n"
        "                          'unit': 'items/s', 'higher_is_better': True, 'pair': i}))\n"
        "print(json.dumps({'event': 'done'}))\n", encoding="utf-8")
    plan = write_plan(tmp_path, [])
    plan.write_text(plan.read_text().replace(json.dumps(["python", str(AB)]), json.dumps(["python", str(probe)])))
    first, _, _, _, _ = run_once(plan, db)
    again, run, status, _, _ = run_once(plan, db)
    assert first.decision == "adopt" and again.decision == "adopt"
    assert "lever" not in run["infra"]["adopted"]


def test_a_code_change_warns_without_making_stale(tmp_path, db):
    other = json.dumps(["python", str(AB), "--ratio", "1.5", "--code-hash", "def456"])
    plan = write_plan(tmp_path, ["--ratio", "1.5"], extra=f"""
[[levers]]
id = "other"
title = "Another lever, measured after the workload code changed"
kind = "speedup"
plan_doc = "docs/other.md"
run = {other}
rule = {{ metric = "items_per_s", min_speedup = 1.2 }}
""")
    report, _, _, _, _ = run_once(plan, db)
    run_once(plan, db, "other")
    with Sequencer.open(plan, db, mode="write") as seq:
        view = lever_view(seq.views.status())
    assert view["state"] == "adopted"
    assert view["warnings"] == [f"workload code changed since run {report.run_id} (code hash abc123 → def456)"]


def test_criterion_events_from_a_run_decide_the_gate(tmp_path, db):
    script = tmp_path / "julia_eval.py"
    script.write_text(
        "import json\n"
        "for crit, outcome in (('c1', 'pass'), ('c2', 'pass'), ('c9', 'pass')):\n"
        "    print(json.dumps({'event': 'criterion', 'candidate': 'torch_jl', 'criterion': crit,\n"
        "                      'outcome': outcome, 'evidence': 'julia_eval.py'}))\n"
        "print(json.dumps({'event': 'done'}))\n", encoding="utf-8")
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[plan]
title = "Gate from a run"
as_of = 2026-11-01

[[levers]]
id = "julia"
title = "Julia port"
kind = "decision"
plan_doc = "eval.md"
run = {json.dumps(["python", str(script)])}
[levers.criteria]
criteria = [{{ id = "c1" }}, {{ id = "c2" }}]
candidates = [{{ id = "torch_jl", title = "Torch.jl" }}]
""", encoding="utf-8")
    report, run, status, _, _ = run_once(plan, db, "julia")
    assert report.status == "succeeded"
    view = lever_view(status, "julia")
    assert view["outcome"] == "GO" and view["decision"]["auto"] is True
    assert view["criteria"]["torch_jl"]["results"] == {"c1": "pass", "c2": "pass"}
    assert any("unknown criterion 'c9'" in n for n in run["notes"])  # refused, kept on the run, not fatal
