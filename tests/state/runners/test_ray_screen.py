"""Branch levers in a screen on a real two-node Ray cluster on 127.0.0.1 (issue 41's rayscreen part): each pass's
job carries every commit the design's runs launch, once each, as its working directory; each design run measures
its commit's code on the node (the bench reads the knob files of the tree it runs in); the workload's setup runs
there once per commit; the real gains are adopted and the interaction named, as on the local runner
(tests/state/code/test_branch_screen.py, whose repository, bench and helpers these are); the user's .git/index is
untouched; a SIGTERM mid-screen leaves no Ray job and no process running."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from optseq.state.runners import ray_trees
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ
from tests.console.test_hangup import _gone
from tests.console.test_signals import _held
from tests.state.code.test_branch_levers import worktrees_git_knows
from tests.state.code.test_branch_screen import HELD, make, runs, states
from tests.state.code.trees import index_stat, touch_tracked
from tests.state.runners.test_ray_branch_levers import CEILING_S, SETUP, optseq, pass_logs, setups

# on one parallel worker (make test runs pytest -n): one Ray cluster for the session
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

RUNNER = '\n[runner]\nforward_env = ["OPTSEQ_NODE_TREES", "HOLD_BLOCK", "HELD_SCRIPT", "HELD_DIR"]\n'
"""The node's cache of this test's own (two tests' repositories made in one second have the same commits), and
what holds a design run at a known point."""


def repo_on_ray(tmp_path: Path):
    """test_branch_screen's repository (branches alpha and beta, a flag), its workload's setup noting each commit
    it sets up and where, and the environment of an optseq sending its runs to the cluster."""
    (tmp_path / "count_setup.py").write_text(SETUP, encoding="utf-8")
    setup = json.dumps(["python", str(tmp_path / "count_setup.py"), str(tmp_path / "setups")])
    repo = make(tmp_path, RUNNER, workload=f"setup = {setup}\n")
    return repo, {**os.environ, "OPTSEQ_NODE_TREES": str(tmp_path / "node")}


def test_a_screen_of_two_branch_levers_and_a_flag_measures_each_combinations_code_on_the_node(tmp_path,
                                                                                             ray_cluster):
    repo, env = repo_on_ray(tmp_path)
    touch_tracked(repo.root / "bench.py")  # an index entry a porcelain read would refresh and write back
    before, index = repo.snapshot(), index_stat(repo.root)
    main = repo.commit("main")
    db = tmp_path / "db"

    proc = optseq(ray_cluster, repo, env, "--run", "screen", "alpha", "beta", "wide")
    out = proc.stdout
    assert proc.returncode == 0, (out, proc.stderr[-3000:])
    assert "is a branch lever and the runner is" not in proc.stderr, proc.stderr
    assert "  alpha: adopt" in out and "  beta: adopt" in out and "  wide: adopt" in out, out
    assert "alpha × beta" in out, out  # beta gains only with alpha's code: the interaction, named
    screen = next(r for r in runs(repo, db) if r.get("kind") == "screen")
    assert screen["runner"] == "ray"
    code = screen["screen"]["code"]
    design = screen["screen"]["design"]["runs"]
    levels = {(a > 0, b > 0): code["runs"][i] for i, (a, b, _w) in enumerate(design)}
    both, commits = levels[(True, True)], list(dict.fromkeys(code["runs"]))
    assert len(commits) == 4 and levels[(False, False)] == main

    # each pass's job carried the four commits, once each, and named no path of this machine
    logs = pass_logs(db, screen["id"])
    assert logs and len(logs) == screen["passes"]
    carried = f"the job carries {ray_trees.joined([c[:7] for c in commits])} as its working directory"
    for k, log in enumerate(logs):
        assert carried in log and ("packed now" if k == 0 else "packed before, from optseq's cache") in log, log[:3000]
    all_logs = "".join(logs)
    assert f"{both[:7]} block 1] code: alpha 1.5 beta 1.4" in all_logs
    assert f"{main[:7]} block 1] code: alpha 1.0 beta 1.0" in all_logs
    with Sequencer.open(repo.root / "optseq.toml", db, mode="read") as seq:
        record = seq.store.get("runs", screen["id"])
    info = ray_cluster.client().get_job_info(record["submission_id"])
    assert info.runtime_env["working_dir"].startswith("gcs://_ray_pkg_")
    job = json.loads(info.runtime_env["env_vars"]["OPTSEQ_ARMS"])
    assert [p["tree"] for p in job["points"]] == [{"ship": f"trees/{c}", "ref": p["tree"]["ref"], "commit": c}
                                                  for c, p in zip(code["runs"], job["points"])]
    node = tmp_path / "node"
    # the setup ran once per commit on the node, whatever the passes and the confirmation
    assert sorted(setups(tmp_path)) == sorted((c, str(node / c)) for c in commits)
    # the zip, kept beside the worktrees: the four commits, each once
    folder = Path(next(iter(worktrees_git_knows(repo)))).parent / "ray"
    zips = [z for z in folder.glob("set-*.zip")]
    assert len(zips) == 1, zips
    with zipfile.ZipFile(zips[0]) as pack:
        names = pack.namelist()
        assert len(names) == len(set(names))
        assert sorted(json.loads(pack.read(ray_trees.MANIFEST))["trees"]) == sorted(commits)
        assert {n.split("/")[1] for n in names if n.startswith("trees/") and n.count("/") >= 2} == set(commits)

    # the best combination confirmed against the stack on the cluster too, its two commits shipped as a pair
    confirmed = screen["screen"]["confirmed"]
    assert confirmed["outcome"] == "adopt" and confirmed["commit"] == both, confirmed
    check = next(r for r in runs(repo, db) if r["id"] == confirmed["run"])
    assert check["runner"] == "ray"
    check_log = "".join(pass_logs(db, check["id"]))
    assert f"the job carries {main[:7]} and {both[:7]} as its working directory" in check_log
    assert f"[candidate {both[:7]} pair 0] code: alpha 1.5 beta 1.4" in check_log, check_log[:3000]
    assert states(repo, db) == {"alpha": "adopted", "beta": "adopted", "wide": "adopted"}

    assert index_stat(repo.root) == index  # the user's .git/index: content, mtime, inode
    # its files, HEAD, branches and stash (read last: the snapshot's own `git status` may refresh the index)
    assert repo.snapshot() == before


def test_a_screen_on_the_cluster_sigtermed_mid_run_leaves_no_ray_job_and_no_process_running(tmp_path,
                                                                                          ray_cluster):
    repo, env = repo_on_ray(tmp_path)
    before, index, db = repo.snapshot(), index_stat(repo.root), tmp_path / "db"
    folder = tmp_path / "held"
    folder.mkdir()
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(db), "--runner", "ray",
                             "--ray-address", ray_cluster.address, "--run", "screen", "alpha", "beta", "wide"],
                            cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**env, "HELD_DIR": str(folder), "HOLD_BLOCK": "2", "HELD_SCRIPT": str(HELD)})
    try:
        pids = _held(folder, lambda: proc.poll() is None, "design run")  # on the node, in block 2
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=CEILING_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, out + err
    assert "1 block done" in out and "nothing decided" in out, out
    _gone(pids)  # the held design run and its child, stopped with the job
    screen = next(r for r in runs(repo, db) if r.get("kind") == "screen")
    assert screen["status"] == "cancelled" and len(screen["screen"]["blocks"]) == 1
    with Sequencer.open(repo.root / "optseq.toml", db, mode="read") as seq:
        sid = seq.store.get("runs", screen["id"])["submission_id"]
    client, end = ray_cluster.client(), time.monotonic() + CEILING_S
    while not str(client.get_job_status(sid)).endswith("STOPPED"):
        assert time.monotonic() < end, f"Ray job {sid} was never stopped"  # a hang guard, not a budget
        time.sleep(0.2)
    running = [j.submission_id for j in client.list_jobs() if str(j.status).rsplit(".", 1)[-1] in
               ("PENDING", "RUNNING") and (j.submission_id or "").startswith(sid.rsplit("-", 2)[0])]
    assert running == [], running
    assert set(states(repo, db).values()) == {"ready"}
    assert index_stat(repo.root) == index and repo.snapshot() == before  # the snapshot read last, as above


def test_a_screen_on_the_cluster_whose_optseq_is_killed_has_its_job_stopped_by_the_next_optseq_naming_it_a_screen(
        tmp_path, ray_cluster):
    repo, env = repo_on_ray(tmp_path)
    db, folder = tmp_path / "db", tmp_path / "held"
    folder.mkdir()
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(db), "--runner", "ray",
                             "--ray-address", ray_cluster.address, "--run", "screen", "alpha", "beta", "wide"],
                            cwd=repo.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**env, "HELD_DIR": str(folder), "HOLD_BLOCK": "2", "HELD_SCRIPT": str(HELD)})
    try:
        pids = _held(folder, lambda: proc.poll() is None, "design run")  # on the node, in block 2
        proc.kill()  # nothing of optseq's own runs after a SIGKILL: the job is left on the cluster
        proc.wait(timeout=CEILING_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with Sequencer.open(repo.root / "optseq.toml", db, mode="read") as seq:
        screen = next(r for r in seq.store.all("runs") if r.get("kind") == "screen")
    sid = screen["submission_id"]
    status = subprocess.run([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(db), "status"],
                            cwd=repo.root, capture_output=True, text=True, timeout=CEILING_S, env=env)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    run = screen["id"]
    assert (f"run {run} (a screen) is interrupted: its optseq stopped, and a screen is not re-attached; its Ray job "
            f"{sid} at {ray_cluster.address} is stopped") in status.stderr, status.stderr
    # the blocks it recorded are those whose last run's line it had read from the job's log when it was killed
    assert f"run {run} (a screen of alpha, beta, wide) is interrupted: its optseq stopped after " in status.stderr
    assert "(a compare)" not in status.stderr
    client, end = ray_cluster.client(), time.monotonic() + CEILING_S
    while not str(client.get_job_status(sid)).endswith("STOPPED"):
        assert time.monotonic() < end, f"Ray job {sid} was never stopped"  # a hang guard, not a budget
        time.sleep(0.2)
    _gone(pids)  # the held design run and its child, stopped with the job
    assert set(states(repo, db).values()) == {"ready"}
