"""optseq's worktrees are what they claim to be, through the CLI: a bench or setup that edits a tracked file of its
checkout fails its run naming the file, and the next run of that commit measures the commit again; a setup runs
again when the script it runs changed, wherever that script is; `doctor` shows a changed checkout as dirty, and
`doctor --prune` removes only the plan's repository's checkouts and leaves git no prunable record of them."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.code_repo import make_repo
from tests.conftest import OPTSEQ
from tests.state.code.test_branch_levers import cli

EDITING_BENCH = '''"""A bench that reads its speed from a tracked file and, when EDIT_TREE is set, rewrites that file."""
import os
from pathlib import Path

speed = float(Path("speed.txt").read_text())
print(f"commit code speed {speed:g}")
print(f"rate: {speed:.4g} items/s")
if os.environ.get("EDIT_TREE"):
    Path("speed.txt").write_text(str(speed * 2))
'''

EDITS_LEVER = '''
[[levers]]
id = "edits"
title = "a bench that rewrites its own file"
kind = "speedup"
timeout_s = 300
rule = { metric = "rate", min_speedup = 1.2, repeats = 3, max_repeats = 3 }
[levers.arms]
candidate_ref = "edits"
'''


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """This test's worktree cache, apart from every other test's (prune removes what it finds)."""
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "cache"))
    return tmp_path / "cache"


def speeds(log: str, arm: str) -> list[str]:
    return re.findall(rf"\[{arm} [0-9a-f]{{7}} [^]]*\] commit code speed (\S+)", log)


@pytest.mark.slow
def test_a_bench_that_edits_its_checkout_fails_the_run_and_the_next_run_measures_the_clean_commit(tmp_path):
    repo = make_repo(tmp_path, levers_extra=EDITS_LEVER, dirty=False)
    repo.git("branch", "edits")
    repo.commit_on("edits", "speed.txt", "150\n", "speed from a file")
    edits = repo.commit_on("edits", "bench.py", EDITING_BENCH, "a bench that reads it")
    db = tmp_path / "db"
    before = repo.snapshot()

    failed = cli(repo, db, "--run", "edits", code=1, env={"EDIT_TREE": "1"})
    line = next(l for l in failed.stdout.splitlines() if l.startswith("run 1 edits: failed"))
    assert f"candidate arm (warm-up 1) changed tracked files of its checkout of {edits[:7]}: speed.txt" in line, line
    listed = next(l for l in cli(repo, db, "doctor").stdout.splitlines() if l.lstrip().startswith(edits[:7]))
    assert "dirty (speed.txt: the next run resets it)" in listed, listed

    ran = json.loads(cli(repo, db, "--run", "edits", "--json").stdout)["runs"][0]
    assert ran["status"] == "succeeded", ran
    log = Path(json.loads(cli(repo, db, "runs", "--json").stdout)["runs"][-1]["log"]).read_text(encoding="utf-8")
    measured = speeds(log, "candidate")
    assert measured and set(measured) == {"150"}, measured  # the commit's file, not the edited one (300)
    assert "dirty" not in cli(repo, db, "doctor").stdout
    assert repo.snapshot() == before


@pytest.mark.slow
def test_a_setup_runs_again_when_its_script_changed_and_one_that_edits_a_tracked_file_fails(tmp_path):
    script = tmp_path / "outside" / "prep.sh"  # outside the repository, by its absolute path
    script.parent.mkdir()
    script.write_text("echo prepared v1 > prepared.txt\n", encoding="utf-8")
    repo = make_repo(tmp_path, workload_extra=f'setup = ["sh", "{script}"]\n', dirty=False)
    db = tmp_path / "db"

    def setups() -> list[str]:
        out = cli(repo, db, "check", "fast").stdout
        return re.findall(r"^\[optseq\] setup of (\w+) .* done", out, re.M)

    assert setups() == ["baseline", "candidate"]
    assert setups() == []  # done once per commit
    script.write_text("echo prepared v2 > prepared.txt\n", encoding="utf-8")
    assert setups() == ["baseline", "candidate"]  # the script changed: its setup is not the one that ran

    script.write_text("echo generated >> notes.md\n", encoding="utf-8")
    out = cli(repo, db, "check", "fast", code=1).stdout
    assert re.search(r"^FAILED: setup of baseline HEAD \([0-9a-f]{7}\) changed tracked files of its checkout: "
                     r"notes.md; .*a setup may write only untracked or ignored files", out, re.M), out
    script.write_text("echo prepared v3 > prepared.txt\n", encoding="utf-8")
    assert setups() == ["baseline", "candidate"]  # the checkout was reset, and set up again


def porcelain_paths(repo, cache: Path) -> list[str]:
    """The records of git's worktree list under optseq's cache, with what git says of each."""
    blocks = repo.git("worktree", "list", "--porcelain").split("\n\n")
    return [b for b in blocks if b.startswith(f"worktree {cache}")]


@pytest.mark.slow
def test_doctor_prune_removes_the_plans_repository_checkouts_and_leaves_git_nothing_prunable(tmp_path, own_cache):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    one, other = make_repo(tmp_path / "one", dirty=False), make_repo(tmp_path / "two", dirty=False)
    db = tmp_path / "db"
    cli(one, db, "check", "fast")
    cli(other, db, "check", "fast")
    assert len(porcelain_paths(one, own_cache)) == 2 and len(porcelain_paths(other, own_cache)) == 2

    # the repository moved: its checkouts' records in git point at folders prune deletes
    moved = tmp_path / "one" / "moved"
    shutil.move(one.root, moved)
    one.root = moved
    pruned = cli(one, db, "doctor", "--prune").stdout
    assert pruned.count("pruned ") == 2, pruned
    assert porcelain_paths(one, own_cache) == []  # no prunable record of optseq's paths left
    assert len(porcelain_paths(other, own_cache)) == 2, "another repository's checkouts are not this plan's"
    assert all("prunable" not in b for b in porcelain_paths(other, own_cache))

    everything = cli(other, db, "doctor", "--prune", "--all").stdout
    assert everything.count("pruned ") == 2 and porcelain_paths(other, own_cache) == [], everything


def test_doctor_prune_outside_any_repository_asks_for_all(tmp_path, own_cache):
    plan = tmp_path / "optseq.toml"
    plan.write_text("", encoding="utf-8")
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(tmp_path / "db"), "doctor", "--prune"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == (f"optseq: doctor --prune removes the worktrees of the plan's repository, and "
                                   f"{tmp_path} is in no git repository (`optseq doctor --prune --all` removes "
                                   "those of every repository)"), proc.stderr


@pytest.mark.slow
def test_a_checkout_taken_again_for_another_ref_keeps_its_note_and_adds_the_ref(tmp_path, own_cache):
    repo = make_repo(tmp_path, dirty=False)
    repo.git("branch", "alias", "fast")  # another name for fast's commit: its checkout is taken again
    fast, db = repo.commit("fast"), tmp_path / "db"
    cli(repo, db, "compare", "main", "fast")
    note_path = next(own_cache.glob(f"*/{fast}.json"))
    first = json.loads(note_path.read_text(encoding="utf-8"))
    cli(repo, db, "compare", "main", "alias")
    raw = note_path.read_text(encoding="utf-8")
    again = json.loads(raw)
    # the note as ensure() wrote it, key for key in its order, with the new ref added and its use stamped
    assert list(again) == ["repo", "git_dir", "commit", "refs", "created", "used", "ready"], again
    assert again == {**first, "refs": ["fast", "alias"], "used": again["used"]} and again["used"] >= first["used"]
    assert raw == json.dumps(again, indent=1)
    listed = next(l for l in cli(repo, db, "doctor").stdout.splitlines() if l.lstrip().startswith(fast[:7]))
    assert "fast, alias" in listed and "ready" in listed, listed
