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


def screen_spec(pair, hold: contextlib.ExitStack, tmp_path: Path) -> tuple[dict, list[str]]:
    """A screen's arms spec over the pair's repository: four design runs launching main, fast, same and fast again
    (each point's tree a worktree of optseq's cache), a setup that counts where it runs; and the three commits."""
    from optseq.state.code import worktrees

    repo, commits, spec = pair
    base, fast, same = commits.baseline.commit, commits.candidate.commit, repo.commit("same")
    (tmp_path / "count.py").write_text("import os, sys\nopen(sys.argv[1], 'a').write(os.environ['OPTSEQ_COMMIT'] + "
                                       "' ' + os.getcwd() + '\\n')\n")
    trees = {c: worktrees.ensure(repo.root, c, ref, hold).for_driver(ref)
             for c, ref in ((base, "HEAD"), (fast, "fast"), (same, "same"))}
    points = [{"argv": ["python", "bench.py"], "env": {"N": str(i)}, "tree": trees[c]}
              for i, c in enumerate((base, fast, same, fast))]
    setup = ["python", str(tmp_path / "count.py"), str(tmp_path / "setups")]
    return {"cwd": spec["cwd"], "metric": "rate", "stack_env": {}, "guards": [], "trees": {"rel": ".", "setup": setup},
            "points": points}, \
        [base, fast, same]


def test_a_screens_commits_travel_once_each_in_one_zip_named_by_them_and_its_points_name_their_folders(
        pair, tmp_path, monkeypatch):
    from optseq.engine.arms import points as node_points
    from optseq.state.sha import hex_digest

    base, fast, same = pair[1].baseline.commit, pair[1].candidate.commit, pair[0].commit("same")
    with contextlib.ExitStack() as hold:
        spec, commits = screen_spec(pair, hold, tmp_path)
        shipped = ray_trees.shipment(json.dumps(spec))
        assert shipped.fresh and shipped.commits == (base, fast, same)
        # named by its commits, beside their checkouts in optseq's cache
        assert shipped.zip.parent == Path(spec["points"][0]["tree"]["path"]).parent / "ray"
        assert shipped.zip.name == f"set-{hex_digest(' '.join(sorted(commits)))[:40]}.zip"
        job = json.loads(shipped.arms)
        assert job["trees"] == spec["trees"] and job["cwd"] == spec["cwd"]
        for point, given in zip(job["points"], spec["points"]):
            commit = given["tree"]["commit"]
            assert point == {**given, "tree": {"ship": f"trees/{commit}", "ref": given["tree"]["ref"],
                                               "commit": commit}}
        with zipfile.ZipFile(shipped.zip) as pack:
            names = pack.namelist()
            assert len(names) == len(set(names))  # fast, launched by two design runs, travels once
            assert json.loads(pack.read(ray_trees.MANIFEST)) == {"trees": [base, fast, same]}
            files = {n for n in names if not n.endswith("/") and n.startswith("trees/") and "/" in n[6:]}
            common = (".gitignore", "bench.py", "notes.md", "optseq.toml")
            assert files == {f"trees/{c}/{f}" for c in commits for f in common} | {f"trees/{fast}/run.sh"}
            assert b"SPEED = 150" in pack.read(f"trees/{fast}/bench.py")
            assert b"# tidied, same speed" in pack.read(f"trees/{same}/bench.py")
            assert json.loads(pack.read(f"trees/{fast}.links.json")) == {"bench_link.py": "bench.py"}
            assert {f"trees/{base}.links.json", f"trees/{same}.links.json"}.isdisjoint(names)
            assert stat.S_IMODE(pack.getinfo(f"trees/{fast}/run.sh").external_attr >> 16) == 0o755
            pack.extractall(tmp_path / "job")  # as Ray unpacks a job's working directory

        # the same commits in another order: the same zip, from the cache
        spec_again = {**spec, "points": list(reversed(spec["points"]))}
        again = ray_trees.shipment(json.dumps(spec_again))
        assert not again.fresh and again.zip == shipped.zip
        # a pair keeps its own zip, named and laid out as before
        pair_zip = ray_trees.shipment(json.dumps(pair[2]))
        assert pair_zip.zip.name == f"{base}-{fast}.zip" and pair_zip.commits == (base, fast)
        with zipfile.ZipFile(pair_zip.zip) as pack:
            assert json.loads(pack.read(ray_trees.MANIFEST)) == {"trees": [base, fast]}
        assert ray_trees.listing() == sorted([shipped.zip, pair_zip.zip])

        # on the node: each design run's folder is its commit's copy, set up once per commit
        monkeypatch.chdir(tmp_path / "job")
        monkeypatch.setenv("OPTSEQ_NODE_TREES", str(tmp_path / "node"))
        ready: dict[str, Path] = {}
        arms = [node_points.arm(job, i, ready) for i in range(len(job["points"]))]
        node = tmp_path / "node"
        assert [arm.cwd for arm in arms] == [str(node / c) for c in (base, fast, same, fast)]
        assert (node / fast / "bench_link.py").is_symlink()
        lines = (tmp_path / "setups").read_text().splitlines()
        assert sorted(lines) == sorted(f"{c} {node / c}" for c in commits)


def test_a_screens_commits_over_rays_upload_limit_are_refused_in_one_line_naming_each(pair, tmp_path):
    with contextlib.ExitStack() as hold:
        spec, _ = screen_spec(pair, hold, tmp_path)
        with pytest.raises(ray_trees.TooLarge) as refused:
            ray_trees.shipment(json.dumps(spec), limit=900)
    said = str(refused.value)
    assert "\n" not in said and "must stay under 900 B (Ray's upload limit)" in said, said
    assert all(f"{ref} (" in said for ref in ("HEAD", "fast", "same")), said
    assert ray_trees.listing() == []


def test_an_arms_spec_whose_trees_optseq_never_writes_is_one_line_not_a_traceback():
    from optseq.state.runners.interface import RunnerError

    with pytest.raises(RunnerError) as refused:
        ray_trees.shipment(json.dumps({"points": [{"argv": ["x"], "tree": {"ref": "main"}}]}))
    said = str(refused.value)
    assert "\n" not in said and said.startswith("cannot read which commits to ship to Ray from the pass's arms spec: ")
    assert "commit" in said, said  # msgspec's path to what is missing
