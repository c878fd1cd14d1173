"""Lever runs as Ray jobs on a real two-node cluster on 127.0.0.1: the same decisions, statuses and records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from optseq.state.runs.testbed import fingerprint_id, machine_parts
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ

# on one parallel worker (make test runs pytest -n): one Ray cluster for the session
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

TINY = Path(__file__).resolve().parents[2] / "console" / "tiny_lever.py"
CRASH = Path(__file__).resolve().parents[2] / "state" / "levers" / "crash.py"
CEILING_S = 180.0
RULE = 'metric = "items_per_s", min_speedup = 1.2, repeats = 2, max_repeats = 10, launches = 5, max_launches = 5'
"""The least launch plan that can decide: 5 launches (one Ray job each) of 2 pairs, all on one side to decide."""


def plan(tmp_path: Path, cluster, argv: list[str], *, extra: str = "", runner: str = "") -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[plan]
title = "Ray runs"
as_of = 2026-12-01
lang = "en"

[runner]
kind = "ray"
address = "{cluster.address}"
forward_env = ["TINY_LEVER_HOLD", "TINY_LEVER_HOLD_PASS"]
{runner}

[[levers]]
id = "lever"
title = "A lever"
kind = "speedup"
plan_doc = "docs/lever.md"
run = {json.dumps(argv)}
timeout_s = 300
rule = {{ {RULE} }}
{extra}
""", encoding="utf-8")
    return path


def job(cluster, sid: str):
    return cluster.client().get_job_info(sid)


def test_a_lever_run_on_the_cluster_is_adopted_like_a_local_one(tmp_path, ray_cluster):
    path = plan(tmp_path, ray_cluster, ["python", str(TINY), "--ratio", "1.5"])
    env = {**os.environ, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(tmp_path / "db"), "OPTSEQ_TESTBED": "launcher-box"}
    proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env=env, capture_output=True, text=True,
                          timeout=CEILING_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run, = json.loads(proc.stdout)["runs"]
    assert (run["status"], run["verdict"], run["decision"]) == ("succeeded", "adopt", "adopt")
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        record = seq.store.get("runs", run["run_id"])
        assert seq.machine.state("lever") == "adopted"
    assert ("lever: starting run (5 launches of up to 2 pairs before it can decide: its 10-pair budget, all at the "
            "first look)") in proc.stderr.splitlines(), proc.stderr[:3000]
    # each pass is one launch, and each launch one Ray job; the sign test counts the launches
    stats = run["summary"]["stats"]
    assert (stats["replicate"], stats["launches"], stats["n"]) == ("launch", 5, 10), stats
    assert record["passes"] == 5 and [c["pairs"] for c in record["pass_counts"]] == [2] * 5, record["pass_counts"]
    assert record["runner"] == "ray" and record["submission_id"].endswith(f"-{run['run_id']}-5")
    prefix = record["submission_id"][:-len("5")]
    assert all(str(job(ray_cluster, f"{prefix}{k}").status).endswith("SUCCEEDED") for k in range(1, 6))
    log = Path(record["log"]).read_text()  # the last pass's
    # every line of the job once: the stream's replays and the final full log are not fed twice
    assert log.count("tiny lever log line 0") == 1 and log.count('"pair": 1') == 2 and '"pair": 2' not in log
    # the testbed is the node's, as its job said (the nodes name none: their fingerprint), not the launcher's name
    assert record["testbed"] == NODE, (record["testbed"], NODE)
    assert "testbed" not in record["env"]
    # a watch from the same launcher goes to the cluster: a node measures it, not the launcher's testbed
    proc = subprocess.run([*OPTSEQ, "--run", "watch", "--json"], env=env, capture_output=True, text=True,
                          timeout=CEILING_S)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (watched,) = json.loads(proc.stdout)["runs"]
    assert (watched["lever"], watched["verdict"]) == ("lever", "holds"), watched


NODE = {"id": fingerprint_id(machine_parts()), "name": fingerprint_id(machine_parts()), "parts": machine_parts()}
"""The testbed the local cluster's nodes report: this machine's fingerprint, unnamed (the test session sets no
OPTSEQ_TESTBED, and the nodes inherit its environment)."""


def test_a_node_that_says_nothing_of_its_testbed_leaves_the_launchers_marked_as_such(tmp_path, ray_cluster):
    """Nodes whose interpreter has no optseq (a bare venv as `[runner] python`): the job's first line says nothing,
    so the run carries the launcher's testbed with a mark; `optseq runs` names it so beside a node's."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env = {**os.environ, "OPTSEQ_DB": str(tmp_path / "db"), "OPTSEQ_TESTBED": "launcher-box"}
    for runner in (f'python = "{bare / "bin" / "python"}"', ""):
        path = plan(tmp_path, ray_cluster, ["python", str(CRASH), "exit"], runner=runner)
        proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env={**env, "OPTSEQ_PLAN": str(path)},
                              capture_output=True, text=True, timeout=CEILING_S)
        assert json.loads(proc.stdout)["runs"][0]["status"] == "failed", proc.stderr[-3000:]
    runs = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env={**env, "OPTSEQ_PLAN": str(path)},
                                     capture_output=True, text=True, check=True).stdout)["runs"]
    mine = {k: v for k, v in runs[0]["testbed"].items() if k != "fallback"}
    assert mine["name"] == "launcher-box" and mine["id"] == NODE["id"], runs[0]["testbed"]
    assert runs[0]["testbed"]["fallback"] == "the launcher's: the node said nothing of its testbed"
    assert runs[1]["testbed"] == NODE, runs[1]["testbed"]
    table = subprocess.run([*OPTSEQ, "runs"], env={**env, "OPTSEQ_PLAN": str(path), "COLUMNS": "250"},
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert "testbed" in table[0].split(), table
    assert any("launcher-box (launcher's; the node said none)" in line for line in table), table
    assert any(NODE["name"] in line and "launcher" not in line for line in table[1:3]), table


def test_the_lever_crashing_on_the_cluster_is_its_failure(tmp_path, ray_cluster):
    path = plan(tmp_path, ray_cluster, ["python", str(CRASH), "exit"])
    with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
        report = seq.run_lever("lever")
        record = seq.store.get("runs", report.run_id)
        assert seq.machine.state("lever") == "ready"
    assert report.status == "failed" and record["detail"].startswith("exited "), record["detail"]
    assert record["exit_code"] not in (None, 0)


def test_a_request_no_node_can_satisfy_says_so_without_submitting(tmp_path, ray_cluster):
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)], extra="resources = { gpus = 1 }")
    with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
        report = seq.run_lever("lever")
        record = seq.store.get("runs", report.run_id)
    assert report.status == "unavailable" and report.exit_code == 3
    assert "no node of the Ray cluster at" in record["reason"] and "GPU 1" in record["reason"]
    assert "submission_id" not in record


def cancel_when(seq_run, predicate, control) -> threading.Thread:
    def watch():
        end = time.monotonic() + CEILING_S
        while not predicate() and time.monotonic() < end:
            time.sleep(0.05)
        control.cancel()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_cancel_while_running_stops_the_job(tmp_path, ray_cluster, monkeypatch):
    from optseq.state.runs.lever_run import RunControl

    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # held after pair 1 until cancelled
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    control, samples = RunControl(), []
    with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
        watcher = cancel_when(None, lambda: len(samples) >= 2, control)
        report = seq.run_lever("lever", control=control,
                               on_event=lambda ev: samples.append(ev) if ev.get("event") == "sample" else None)
        watcher.join()
        record = seq.store.get("runs", report.run_id)
        assert seq.machine.state("lever") == "ready"
    assert report.status == "cancelled" and len(samples) == 2
    assert str(job(ray_cluster, record["submission_id"]).status).endswith("STOPPED")


def test_cancel_while_pending_means_the_job_never_starts(tmp_path, ray_cluster):
    from optseq.state.runs.lever_run import RunControl

    client = ray_cluster.client()
    # both nodes' bench slots taken: the lever's job must wait
    holders = [client.submit_job(entrypoint="sleep 600", entrypoint_resources={"optseq_bench": 1},
                                 runtime_env={"env_vars": {"RAY_JOB_STOP_WAIT_TIME_S": "1"}}) for _ in range(2)]
    end = time.monotonic() + CEILING_S
    while not all(str(client.get_job_status(h)).endswith("RUNNING") for h in holders):
        assert time.monotonic() < end, "holder jobs never started"
        time.sleep(0.2)
    marker = tmp_path / "started"
    path = plan(tmp_path, ray_cluster, ["python", "-c", f"open({str(marker)!r}, 'w').close()"])
    control, notes = RunControl(), []
    try:
        with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
            watcher = cancel_when(None, lambda: any("is pending" in n for n in notes), control)
            report = seq.run_lever("lever", control=control, on_log=notes.append)
            watcher.join()
            record = seq.store.get("runs", report.run_id)
    finally:
        for h in holders:
            client.stop_job(h)
    assert report.status == "cancelled" and record["detail"].startswith("cancelled")
    # the slots are free again: Ray gets round to the cancelled job, which ends without running the command
    sid = record["submission_id"]
    end = time.monotonic() + CEILING_S
    while not str(client.get_job_status(sid)).endswith(("SUCCEEDED", "FAILED", "STOPPED")):
        assert time.monotonic() < end, client.get_job_info(sid)
        time.sleep(0.2)
    assert not marker.exists(), client.get_job_logs(sid)




def test_the_worker_node_dying_mid_run_is_interrupted_not_the_levers_failure(tmp_path, ray_cluster, monkeypatch):
    from optseq.state.runs.lever_run import RunControl

    client = ray_cluster.client()
    # the head's bench slot taken, so the lever's job lands on the worker node
    holder = client.submit_job(entrypoint="sleep 600", entrypoint_resources={"optseq_bench": 1, "head_node": 1},
                               runtime_env={"env_vars": {"RAY_JOB_STOP_WAIT_TIME_S": "1"}})
    monkeypatch.setenv("TINY_LEVER_HOLD", str(tmp_path / "never"))  # held after pair 1 until the node is gone
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    samples = []

    def kill_worker_after_a_pair():
        end = time.monotonic() + CEILING_S
        while len(samples) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        ray_cluster.kill("worker")

    killer = threading.Thread(target=kill_worker_after_a_pair, daemon=True)
    try:
        with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
            killer.start()
            report = seq.run_lever("lever", control=RunControl(),
                                   on_event=lambda ev: samples.append(ev) if ev.get("event") == "sample" else None)
            killer.join()
            record = seq.store.get("runs", report.run_id)
            state = seq.machine.state("lever")
    finally:
        client.stop_job(holder)
        ray_cluster.start_worker()  # the next test gets two nodes again
    assert report.status == "interrupted", record["detail"]
    assert "not the lever's failure" in record["detail"] and state == "ready"
    assert report.exit_code == 1


def test_the_overhead_bench_writes_its_section_side_by_side(tmp_path, ray_cluster):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nkept as it is\n")
    proc = subprocess.run([sys.executable, "-m", "optseq.state.bench.runners", "--runs", "1", "--address",
                           ray_cluster.address, "--write", str(doc)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = doc.read_text()
    assert text.startswith("# Performance\n\nkept as it is\n") and text.count("<!-- section:runners -->") == 1
    rows = [line for line in text.splitlines() if line.startswith(("| submit", "| whole run"))]
    assert len(rows) == 2 and all(row.count(" s |") == 3 for row in rows), rows


def kill_mid_pass(tmp_path: Path, path: Path, pass_no: int) -> dict:
    """`optseq --run lever` SIGKILLed while pass `pass_no` holds after its first pair; returns its env."""
    import signal

    env = {**os.environ, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(tmp_path / "db"),
           "TINY_LEVER_HOLD": str(tmp_path / "release"), "TINY_LEVER_HOLD_PASS": str(pass_no)}
    proc = subprocess.Popen([*OPTSEQ, "--run", "lever"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = tmp_path / "db" / "runs" / "1" / f"pass-{pass_no}.log"
    end = time.monotonic() + CEILING_S
    while not (log.exists() and '"pair": 0' in log.read_text(errors="replace")):
        assert time.monotonic() < end and proc.poll() is None, f"the run never reached pass {pass_no}'s first pair"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return env


def test_optseq_killed_mid_run_is_re_attached_by_the_next_optseq_and_decided(tmp_path, ray_cluster):
    # no launch decides alone (the first look needs 5), so the run is killed in pass 2: the next optseq reads
    # pass 1 back from its log, follows pass 2's job from its first line, then launches passes 3 to 5
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    env = kill_mid_pass(tmp_path, path, 2)
    with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
        record = seq.store.get("runs", 1)
        detached = seq.views.detached_runs()
        todo = seq.views.todo()
        assert seq.machine.state("lever") == "running"
    assert record["status"] == "running" and record["passes"] == 2 and "re-attaches" in record["note"]
    assert [d.run for d in detached] == [1] and any("optseq --run lever re-attaches" in t for t in todo)
    assert str(job(ray_cluster, record["submission_id"]).status).endswith("RUNNING")  # it went on meanwhile
    (tmp_path / "release").touch()
    proc = subprocess.run([*OPTSEQ, "--run", "ready", "--json"], env=env, capture_output=True, text=True,
                          timeout=CEILING_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert [(r["run_id"], r["status"], r["decision"]) for r in out["runs"]] == [(1, "succeeded", "adopt")]
    stats = out["runs"][0]["summary"]["stats"]
    assert (stats["launches"], stats["n"]) == (5, 10), out["runs"][0]["message"]
    assert "re-attaching run 1" in proc.stderr and "pass 1: 4 samples read back" in proc.stderr
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        record = seq.store.get("runs", 1)
        assert seq.machine.state("lever") == "adopted" and not seq.views.detached_runs()
    samples = [json.loads(line) for line in (tmp_path / "db" / "runs" / "1" / "samples.jsonl").open()]
    keys = [(s["run"], s["pair"], s["arm"]) for s in samples]
    assert len(keys) == 20 and len(set(keys)) == 20  # the replayed pass 2 log counted once
    assert [c["pairs"] for c in record["pass_counts"]] == [2] * 5, record["pass_counts"]
    assert record["submission_id"].endswith("-1-5") and record["reattached"]
    # pass 2's job, followed to its end, and each pass after it, a Ray job of its own
    prefix = record["submission_id"][:-len("5")]
    assert all(str(job(ray_cluster, f"{prefix}{k}").status).endswith("SUCCEEDED") for k in range(1, 6))


def test_a_detached_run_whose_job_is_gone_is_interrupted(tmp_path, ray_cluster):
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    env = kill_mid_pass(tmp_path, path, 1)
    with Sequencer.open(path, tmp_path / "db", mode="write") as seq:
        sid = seq.store.get("runs", 1)["submission_id"]
    client = ray_cluster.client()
    client.stop_job(sid)
    end = time.monotonic() + CEILING_S
    while not str(client.get_job_status(sid)).endswith("STOPPED"):
        assert time.monotonic() < end
        time.sleep(0.2)
    client.delete_job(sid)
    proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env=env, capture_output=True, text=True,
                          timeout=CEILING_S)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and [r["status"] for r in out["runs"]] == ["interrupted"], proc.stderr[-3000:]
    message = out["runs"][0]["message"]
    # Deleted, the job is gone; on a loaded cluster Ray may still answer for it, as lost with its supervisor
    # (JOB_SUPERVISOR_ACTOR_DIED): either way the run is interrupted, never the lever's failure
    assert f"Ray job {sid} is gone" in message or f"Ray lost job {sid}" in message, message
    assert "not the lever's failure" in message
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        assert seq.machine.state("lever") == "ready" and not seq.views.detached_runs()


def test_two_ready_levers_run_in_parallel_on_separate_nodes(tmp_path, ray_cluster):
    from tests.console.test_parallel import plan as parallel_plan
    from tests.console.test_parallel import run_parallel

    runner = f'[runner]\nkind = "ray"\naddress = "{ray_cluster.address}"\nforward_env = ["TINY_LEVER_HOLD"]'
    out, _ = run_parallel(tmp_path, parallel_plan(tmp_path, runner))
    runs = {r["lever"]: r for r in out["runs"]}
    assert all(r["status"] == "succeeded" and r["decision"] == "adopt" for r in runs.values())
    with Sequencer.open(tmp_path / "plan.toml", tmp_path / "db", mode="read") as seq:
        records = [seq.store.get("runs", runs[name]["run_id"]) for name in ("left", "right")]
    # each pass is a launch, a Ray job of its own; both first passes were held after their first pair until
    # both had reached it, so those two jobs ran at the same time
    assert all(r["passes"] == r["summary"]["stats"]["launches"] > 1 for r in records), records
    firsts = [r["submission_id"][:-len(str(r["passes"]))] + "1" for r in records]
    nodes = {job(ray_cluster, sid).driver_node_id for sid in firsts}
    assert len(nodes) == 2  # one bench per node: the two ran side by side on different nodes


def test_the_console_re_attaches_a_detached_run_when_it_opens(tmp_path, ray_cluster, monkeypatch):
    import asyncio

    from optseq.console.tui.app import make_app
    from tests.console.test_app import cell, until

    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    kill_mid_pass(tmp_path, path, 1)
    (tmp_path / "release").touch()
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")

    async def go():
        app = make_app(path, tmp_path / "db")
        async with app.run_test(size=(100, 30)) as pilot:
            panel = app.main.panel
            await until(pilot, lambda: panel.last_report is not None, timeout=CEILING_S, what="the re-attached run")
            assert panel.last_report.run_id == 1 and panel.last_report.decision == "adopt"
            # the panel holds the report before the screen redraws the table: wait for the table itself
            await until(pilot, lambda: cell(app, "lever", "state") == "adopted", what="the table to say adopted")
            log = "\n".join(panel.query_one("#run-log").lines)
            assert "re-attached to Ray job" in log

    asyncio.run(go())


def test_a_job_whose_logs_ray_cannot_serve_is_interrupted_not_the_levers_failure(tmp_path, ray_cluster):
    from types import SimpleNamespace

    from tests.state.runners.log_outage import LogOutage

    # the job runs and exits 0 on the real cluster, but its logs are answered 500 (streamed and whole): the
    # lever's done event is in what Ray could not serve, which is the cluster's fault
    with LogOutage(ray_cluster.address) as outage:
        path = plan(tmp_path, SimpleNamespace(address=outage.address), ["python", str(TINY)])
        env = {**os.environ, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(tmp_path / "db")}
        proc = subprocess.run([*OPTSEQ, "--run", "lever", "--json"], env=env, capture_output=True, text=True,
                              timeout=CEILING_S)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and [r["status"] for r in out["runs"]] == ["interrupted"], proc.stderr[-3000:]
    message = out["runs"][0]["message"]
    assert "Ray could not serve the log of job" in message and "not the lever's failure" in message, message
    assert "exited 0 without a done event" not in proc.stdout + proc.stderr
    assert outage.refused >= 2  # the stream's attach and the whole log at the end both met the outage
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        record = seq.store.get("runs", 1)
        assert seq.machine.state("lever") == "ready" and not seq.views.detached_runs()
    assert str(job(ray_cluster, record["submission_id"]).status).endswith("SUCCEEDED")  # the job itself was fine


def test_a_re_attach_after_the_clock_jumped_two_days_forward_follows_the_job_to_its_end(tmp_path, ray_cluster):
    from tests.console.test_clock_jumps import TWO_DAYS, jumping

    # the plan's timeout is 300 s: a re-attach that measured the run's time on the wall clock would stop this
    # healthy job as timed out at once
    path = plan(tmp_path, ray_cluster, ["python", str(TINY)])
    env = kill_mid_pass(tmp_path, path, 2)
    (tmp_path / "release").touch()
    (tmp_path / "jump").touch()
    proc = subprocess.run([*OPTSEQ, "--run", "ready", "--json"], env=jumping(env, tmp_path / "jump", TWO_DAYS),
                          capture_output=True, text=True, timeout=CEILING_S)
    assert (tmp_path / "jump.seen").exists()  # that optseq ran two days ahead
    assert proc.returncode == 0 and "timed out" not in proc.stderr, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert [(r["run_id"], r["status"], r["decision"]) for r in out["runs"]] == [(1, "succeeded", "adopt")]
    assert "re-attaching run 1" in proc.stderr
    with Sequencer.open(path, tmp_path / "db", mode="read") as seq:
        record = seq.store.get("runs", 1)
    assert 0 < record["elapsed_s"] < CEILING_S * 2, record["elapsed_s"]
