"""Branch levers and the commit gate on a real two-node Ray cluster on 127.0.0.1: each job carries both commits as
its working directory (none of this machine's paths), the workload's setup runs once per commit on the node, a
killed optseq's branch lever run is re-attached and a killed compare ends interrupted with its job stopped, and the
user's working tree is left byte for byte as it was. On tests/code_repo.py's repository, whose speed is its code's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from optseq.state.sequencer import Sequencer
from tests.code_repo import CodeRepo, make_repo
from tests.conftest import OPTSEQ

# on one parallel worker (make test runs pytest -n): one Ray cluster for the session
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

CEILING_S = 300.0
RUNNER = '\n[runner]\nforward_env = ["OPTSEQ_NODE_TREES"]\n'
"""Each test's node cache of its own: two tests' repositories made in one second have the same commits."""
SETUP = '''import os, sys
with open(sys.argv[1], "a", encoding="utf-8") as f:
    f.write(f"{os.environ['OPTSEQ_COMMIT']} {os.getcwd()}\\n")
'''
HOLD = '''import os, runpy, time
if os.environ.get("OPTSEQ_PASS") == "1" and os.environ.get("OPTSEQ_PAIR") == "1":
    while not os.path.exists({release!r}):
        time.sleep(0.05)
runpy.run_path("bench.py", run_name="__main__")
'''
"""The workload, held in pass 1 before pair 1 until the test lets it go: a run caught mid-pass without a race."""


def setup_repo(tmp_path: Path, *, hold: bool = False) -> tuple[CodeRepo, dict]:
    """The repository (its workload's setup counting its runs in tmp_path/setups), and the environment of an optseq
    sending runs to the cluster."""
    (tmp_path / "count_setup.py").write_text(SETUP, encoding="utf-8")
    setup = json.dumps(["python", str(tmp_path / "count_setup.py"), str(tmp_path / "setups")])
    repo = make_repo(tmp_path, plan_extra=RUNNER, workload_extra=f"setup = {setup}")
    if hold:  # the plan is the working tree's: the commits keep their bench, the command wraps it
        plan = repo.root / "optseq.toml"
        command = json.dumps(["python", "-c", HOLD.format(release=str(tmp_path / "release"))])
        plan.write_text(plan.read_text().replace('command = ["python", "bench.py"]', f"command = {command}"))
    env = {**os.environ, "OPTSEQ_NODE_TREES": str(tmp_path / "node")}
    return repo, env


def optseq(cluster, repo: CodeRepo, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(repo.root.parent / "db"),
                           "--runner", "ray", "--ray-address", cluster.address, *args], cwd=repo.root,
                          capture_output=True, text=True, timeout=CEILING_S, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


def setups(tmp_path: Path) -> list[tuple[str, str]]:
    path = tmp_path / "setups"
    return [tuple(line.split(" ", 1)) for line in path.read_text().splitlines()] if path.exists() else []


def pass_logs(db: Path, run_id: int) -> list[str]:
    logs = sorted((db / "runs" / str(run_id)).glob("pass-*.log"), key=lambda p: int(p.stem.split("-")[1]))
    return [log.read_text(errors="replace") for log in logs]


def test_a_branch_lever_and_compare_run_on_the_cluster_on_their_commits_with_setup_once_per_commit(
        tmp_path, ray_cluster):
    repo, env = setup_repo(tmp_path)
    db = tmp_path / "db"
    before = repo.snapshot()
    main, fast = repo.commit("main"), repo.commit("fast")

    proc = optseq(ray_cluster, repo, env, "--run", "fast", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run, = json.loads(proc.stdout)["runs"]
    assert (run["status"], run["decision"]) == ("succeeded", "adopt"), run
    assert "dashboard_sdk" not in proc.stderr  # Ray's upload chatter: the pass's log says what the job carries
    with Sequencer.open(repo.root / "optseq.toml", db, mode="read") as seq:
        record = seq.store.get("runs", run["run_id"])
    assert record["runner"] == "ray" and record["submission_id"]
    logs = pass_logs(db, run["run_id"])
    assert len(logs) == record["passes"]
    for k, log in enumerate(logs):
        # each arm's lines say the commit it ran; the node has the commits' code, not the working tree's
        assert f"[baseline {main[:7]} pair 0]" in log and f"[candidate {fast[:7]} pair 0]" in log
        assert "commit code speed 100" in log and "commit code speed 150" in log
        carried = f"the job carries {main[:7]} and {fast[:7]} as its working directory"
        assert carried in log and ("packed now" if k == 0 else "packed before, from optseq's cache") in log
    # what the job was given: both commits as its working directory, no path of this machine in its arms spec
    info = ray_cluster.client().get_job_info(record["submission_id"])
    assert info.runtime_env["working_dir"].startswith("gcs://_ray_pkg_")
    trees = json.loads(info.runtime_env["env_vars"]["OPTSEQ_ARMS"])["trees"]
    assert trees["baseline"] == {"ship": f"trees/{main}", "ref": "HEAD", "commit": main}
    assert trees["candidate"] == {"ship": f"trees/{fast}", "ref": "fast", "commit": fast}
    # the setup ran once per commit, in the node's copy of it, whatever the passes
    node = tmp_path / "node"
    assert sorted(setups(tmp_path)) == sorted([(main, str(node / main)), (fast, str(node / fast))])
    assert (node / f"{main}.setup.json").is_file() and (node / f"{fast}.setup.json").is_file()

    proc = optseq(ray_cluster, repo, env, "compare", "main", "fast")
    assert proc.returncode == 0 and "is not slower than" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    compare_log = pass_logs(db, run["run_id"] + 1)[0]
    assert "packed before, from optseq's cache" in compare_log  # the lever's pair: nothing packed again
    proc = optseq(ray_cluster, repo, env, "compare", "fast", "main")
    assert proc.returncode == 7 and "is slower than" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert "packed now" in pass_logs(db, run["run_id"] + 2)[0]  # another pair, the same commits on the node
    assert len(setups(tmp_path)) == 2  # a second run, and a third, set nothing up again
    assert repo.snapshot() == before


def test_a_pair_of_commits_over_rays_upload_limit_is_unavailable_before_anything_is_submitted(
        tmp_path, ray_cluster, monkeypatch):
    from optseq.state.runners import ray_trees

    repo, env = setup_repo(tmp_path)
    monkeypatch.setattr(ray_trees, "LIMIT", 1000)
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "worktrees"))  # this test's cache alone
    monkeypatch.setenv("OPTSEQ_RUNNER", "ray")
    monkeypatch.setenv("OPTSEQ_RAY_ADDRESS", ray_cluster.address)
    with Sequencer.open(repo.root / "optseq.toml", tmp_path / "db", mode="write") as seq:
        report = seq.run_lever("fast")
        record = seq.store.get("runs", report.run_id)
        assert seq.machine.state("fast") == "ready"
    assert (report.status, report.exit_code) == ("unavailable", 3)
    assert "\n" not in record["reason"] and "must stay under 1000 B (Ray's upload limit)" in record["reason"]
    assert "submission_id" not in record and ray_trees.listing() == []


def kill_in_pass_1(tmp_path: Path, cluster, repo: CodeRepo, env: dict, *args: str) -> None:
    """The optseq running `args` SIGKILLed while its pass 1 holds after its first pair."""
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(tmp_path / "db"),
                             "--runner", "ray", "--ray-address", cluster.address, *args], cwd=repo.root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "db" / "runs" / "1" / "pass-1.log"
    end = time.monotonic() + CEILING_S
    while not (log.exists() and '"pair": 0' in log.read_text(errors="replace")):
        assert time.monotonic() < end and proc.poll() is None, "the run never reached pass 1's first pair"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_branch_lever_run_whose_optseq_died_is_re_attached_and_its_next_pass_ships_again(tmp_path, ray_cluster):
    repo, env = setup_repo(tmp_path, hold=True)
    main, fast = repo.commit("main"), repo.commit("fast")
    kill_in_pass_1(tmp_path, ray_cluster, repo, env, "--run", "fast")
    with Sequencer.open(repo.root / "optseq.toml", tmp_path / "db", mode="write") as seq:
        assert [d.run for d in seq.views.detached_runs()] == [1]
        assert any("optseq --run fast re-attaches" in line for line in seq.views.todo())
    (tmp_path / "release").touch()
    proc = optseq(ray_cluster, repo, env, "--run", "fast", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    run, = json.loads(proc.stdout)["runs"]
    assert (run["run_id"], run["status"], run["decision"]) == (1, "succeeded", "adopt"), run
    assert "re-attaching run 1" in proc.stderr
    logs = pass_logs(tmp_path / "db", 1)
    assert len(logs) >= 2  # pass 1 alone cannot decide: a pass after the re-attach was submitted
    for log in logs[1:]:
        assert "packed before, from optseq's cache" in log
        assert f"[baseline {main[:7]} pair 0]" in log and f"[candidate {fast[:7]} pair 0]" in log
    assert sorted(c for c, _ in setups(tmp_path)) == sorted([main, fast])


def test_a_compare_whose_optseq_died_ends_interrupted_and_its_job_is_stopped(tmp_path, ray_cluster):
    repo, env = setup_repo(tmp_path, hold=True)
    kill_in_pass_1(tmp_path, ray_cluster, repo, env, "compare", "main", "fast")
    with Sequencer.open(repo.root / "optseq.toml", tmp_path / "db", mode="read") as seq:
        sid = seq.store.get("runs", 1)["submission_id"]
    assert str(ray_cluster.client().get_job_status(sid)).endswith("RUNNING")  # held, on the cluster
    proc = optseq(ray_cluster, repo, env, "status")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "None:" not in proc.stdout and "goes on as Ray job" not in proc.stdout, proc.stdout
    assert f"run 1 (a compare) is interrupted" in proc.stderr and f"its Ray job {sid} at" in proc.stderr
    assert "is stopped" in proc.stderr, proc.stderr
    with Sequencer.open(repo.root / "optseq.toml", tmp_path / "db", mode="read") as seq:
        record = seq.store.get("runs", 1)
        assert record["status"] == "interrupted" and "may still be running" in record["note"]
        assert seq.views.detached_runs() == []
    client, end = ray_cluster.client(), time.monotonic() + CEILING_S
    while not str(client.get_job_status(sid)).endswith("STOPPED"):
        assert time.monotonic() < end, f"Ray job {sid} was never stopped"
        time.sleep(0.2)
