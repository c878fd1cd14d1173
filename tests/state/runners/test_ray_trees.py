"""What a branch lever's Ray job carries (state/runners/ray_trees.py), without a cluster: both commits' tracked files
as `trees/<commit>/` in one zip, kept in optseq's cache per pair, refused over Ray's upload limit; the node's copy
of a shipped commit (engine/arms/trees.py); a compare whose optseq died ends interrupted, never detached."""
from __future__ import annotations

import contextlib
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from optseq.state.code import branch
from optseq.state.runners import ray_trees
from tests.code_repo import make_repo


@pytest.fixture
def pair(tmp_path, monkeypatch):
    """A repository whose branch fast adds a symlink and an executable script, and the arms spec of main against
    fast, its worktrees held while the test runs."""
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "worktrees"))
    repo = make_repo(tmp_path)
    side = tmp_path / "side"
    repo.git("worktree", "add", "--quiet", str(side), "fast")
    os.symlink("bench.py", side / "bench_link.py")
    (side / "run.sh").write_text("#!/bin/sh\necho fast\n")
    (side / "run.sh").chmod(0o755)
    repo.git("add", "bench_link.py", "run.sh", cwd=side)
    repo.git("commit", "--quiet", "-m", "a link and a script", cwd=side)
    repo.git("worktree", "remove", str(side))
    commits = branch.resolve(repo.root, "main", "fast", "test")
    with contextlib.ExitStack() as hold:
        yield repo, commits, {"cwd": str(repo.root), "metric": "rate",
                              "trees": branch.trees(commits, ["python", "setup.py"], hold)}


def test_both_commits_travel_as_their_tracked_files_and_the_job_names_no_path_here(pair):
    repo, commits, spec = pair
    base, fast = commits.baseline.commit, commits.candidate.commit
    # what a local setup leaves in a checkout: a tracked file rewritten, a build output
    checkout = Path(spec["trees"]["baseline"]["path"])
    (checkout / "bench.py").write_text("rewritten by a setup\n")
    (checkout / "built.so").write_text("built here\n")
    shipped = ray_trees.shipment(json.dumps(spec))
    assert shipped.fresh and shipped.zip == ray_trees.cached(spec["trees"])
    job = json.loads(shipped.arms)
    assert {k: v for k, v in job.items() if k != "trees"} == {k: v for k, v in spec.items() if k != "trees"}
    assert job["trees"]["baseline"] == {"ship": f"trees/{base}", "ref": "main", "commit": base}
    assert job["trees"]["candidate"] == {"ship": f"trees/{fast}", "ref": "fast", "commit": fast}
    assert (job["trees"]["rel"], job["trees"]["setup"]) == (".", ["python", "setup.py"])
    with zipfile.ZipFile(shipped.zip) as pack:
        names = set(pack.namelist())
        files = {n for n in names if not n.endswith("/") and n.startswith("trees/") and "/" in n[6:]}
        common = (".gitignore", "bench.py", "notes.md", "optseq.toml")
        assert files == {f"trees/{c}/{f}" for c in (base, fast) for f in common} | {f"trees/{fast}/run.sh"}
        assert pack.read(f"trees/{base}/bench.py") == repo.git("show", f"{base}:bench.py").encode() + b"\n"
        assert b"SPEED = 150" in pack.read(f"trees/{fast}/bench.py")
        assert pack.read(f"trees/{base}/notes.md") == b"notes\n"  # the user's uncommitted edit stays home
        assert json.loads(pack.read(f"trees/{fast}.links.json")) == {"bench_link.py": "bench.py"}
        assert f"trees/{base}.links.json" not in names
        assert stat.S_IMODE(pack.getinfo(f"trees/{fast}/run.sh").external_attr >> 16) == 0o755
        assert stat.S_IMODE(pack.getinfo(f"trees/{fast}/bench.py").external_attr >> 16) == 0o644


def test_a_second_pass_takes_the_pair_from_the_cache(pair):
    _, _, spec = pair
    first = ray_trees.shipment(json.dumps(spec))
    inode = first.zip.stat().st_ino
    again = ray_trees.shipment(json.dumps(spec))
    assert not again.fresh and again.zip == first.zip and again.zip.stat().st_ino == inode
    assert again.arms == first.arms
    assert ray_trees.listing() == [first.zip]
    assert ray_trees.prune() == [first.zip] and ray_trees.listing() == [] and not first.zip.parent.exists()


def test_a_pair_over_rays_upload_limit_is_refused_in_one_line(pair):
    _, _, spec = pair
    with pytest.raises(ray_trees.TooLarge) as refused:
        ray_trees.shipment(json.dumps(spec), limit=600)
    said = str(refused.value)
    assert "\n" not in said and "main (" in said and "fast (" in said
    assert "must stay under 600 B (Ray's upload limit)" in said, said
    assert ray_trees.listing() == [] and not list(ray_trees.cached(spec["trees"]).parent.iterdir())


def test_a_pass_without_local_checkouts_ships_nothing(pair):
    _, _, spec = pair
    assert ray_trees.shipment(None) is None
    assert ray_trees.shipment(json.dumps({"cwd": "/x"})) is None
    shipped = json.loads(ray_trees.shipment(json.dumps(spec)).arms)
    assert ray_trees.shipment(json.dumps(shipped)) is None  # already shipped trees name no checkout here


def test_a_checkout_gone_before_its_pair_was_packed_is_one_line(pair):
    import shutil

    from optseq.state.runners.interface import RunnerError

    _, _, spec = pair
    shutil.rmtree(spec["trees"]["candidate"]["path"])
    with pytest.raises(RunnerError) as refused:
        ray_trees.shipment(json.dumps(spec))
    assert "\n" not in str(refused.value) and "is gone" in str(refused.value)


def test_the_node_copies_a_shipped_commit_with_its_symlinks(pair, tmp_path, monkeypatch):
    from optseq.engine.arms import trees as node

    _, commits, spec = pair
    fast = commits.candidate.commit
    unpacked = tmp_path / "job"
    with zipfile.ZipFile(ray_trees.shipment(json.dumps(spec)).zip) as pack:
        pack.extractall(unpacked)  # as Ray does: a link would be a file, so none is in the zip
    monkeypatch.setenv("OPTSEQ_NODE_TREES", str(tmp_path / "node"))
    root = node._from_shipment(unpacked / "trees" / fast, fast)
    assert root == tmp_path / "node" / fast
    assert (root / "bench_link.py").is_symlink() and os.readlink(root / "bench_link.py") == "bench.py"
    assert b"SPEED = 150" in (root / "bench_link.py").read_bytes()


def test_a_compare_whose_optseq_died_on_a_cluster_ends_interrupted_not_detached(tmp_path):
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.store import Store
    from tests.state.store.test_store import dead_pid

    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    with Store.open(db) as store:
        run = store.append("runs", {"kind": "compare", "status": "running", "pid": dead_pid(), "started": "x",
                                    "passes": 1, "runner": "ray"})
        # a cluster nobody listens on: the stop is tried and fails in one line
        store.update("runs", run["id"], {"submission_id": "optseq-ab-1-1", "ray_address": "http://127.0.0.1:9"})
    with Sequencer.open(repo.root / "optseq.toml", db, mode="write") as seq:
        record = seq.store.get("runs", run["id"])
        assert record["status"] == "interrupted" and record.get("ended")
        assert "may still be running" in record["note"] and "optseq-ab-1-1" in record["note"]
        assert seq.views.detached_runs() == []
        assert not any("None" in line or "goes on as Ray job" in line for line in seq.views.todo())
        said = [w for w in seq.held.warnings if f"run {run['id']} (a compare)" in w]
        assert len(said) == 1 and "\n" not in said[0] and "Traceback" not in said[0]
        assert "optseq-ab-1-1 may still be running" in said[0] and "ray job stop optseq-ab-1-1" in said[0], said
    assert (db / "runs" / str(run["id"]) / "optseq-ab-1-1.cancelled").exists()  # a pending job would not start
