"""Branch levers in a screen (issue 40, point 1), through the CLI on a throwaway repository: each design run launches
the commit that combines the code of its branch levers that are on (git merge-tree and commit-tree, in worktrees
of optseq's cache), flag levers on top; conflicting branches refused in one line naming both and the file; the
user's working tree and .git/index untouched; the combinations' worktrees listed and pruned by doctor; a SIGTERM
mid-screen leaves nothing running.

The bench's speed is its code's: knob_a.txt (branch alpha: ×1.5) and knob_b.txt (branch beta: ×1.4, and only with
alpha's code beside it, an interaction the screen must confirm as a combination), and a flag (--wide=1: ×1.3)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.code_repo import CodeRepo
from tests.conftest import OPTSEQ
from tests.console.test_hangup import _gone
from tests.console.test_signals import _held
from tests.state.code.test_branch_levers import cli, worktrees_git_knows
from tests.state.code.trees import index_stat, touch_tracked

HELD = Path(__file__).parents[1] / "lever_scripts" / "held.py"

BENCH = '''"""The team's benchmark: its speed is what its knob files say."""
import argparse
import math
import os
import random
import sys
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--wide", type=int, default=0)
args = p.parse_args()
if os.environ.get("HOLD_BLOCK") and os.environ.get("OPTSEQ_PAIR") == os.environ["HOLD_BLOCK"]:
    os.execv(sys.executable, [sys.executable, os.environ["HELD_SCRIPT"]])
here = Path(__file__).parent
alpha = float((here / "knob_a.txt").read_text())
beta = float((here / "knob_b.txt").read_text())
rng = random.Random(f"{os.environ.get('OPTSEQ_LAUNCH')}:{os.environ.get('OPTSEQ_ARM')}:{os.environ.get('OPTSEQ_PAIR')}")
rate = 100.0 * alpha * (beta if alpha > 1 else 1.0) * (1.3 if args.wide else 1.0) * math.exp(rng.gauss(0, 0.01))
print(f"code: alpha {alpha} beta {beta} wide {args.wide}")
print(f"rate: {rate:.4f} items/s")
'''


def lever(lid: str, arms: str) -> str:
    return f'''
[[levers]]
id = "{lid}"
title = "{lid}"
kind = "speedup"
timeout_s = 600
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
{arms}
'''


PLAN = '''[plan]
title = "Branches screened"
as_of = 2026-12-06
lang = "en"

[workload]
command = ["python", "bench.py", "--wide=0"]
metric = { name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }
warmup = 0
''' + lever("alpha", 'candidate_ref = "alpha"') + lever("beta", 'candidate_ref = "beta"') \
    + lever("wide", 'candidate_args = ["--wide=1"]')


SETUP = "import pathlib\npathlib.Path('built.txt').write_text(pathlib.Path('knob_a.txt').read_text())\n"
"""A workload's setup: it writes an ignored file in the checkout it builds."""


def make(tmp_path: Path, extra: str = "", workload: str = "") -> CodeRepo:
    """The repository on main, mid-work (notes.md changed, scratch.txt untracked), with branches alpha (knob_a
    1.5), beta (knob_b 1.4) and gamma (knob_a 1.1: it conflicts with alpha)."""
    root = tmp_path / "repo"
    root.mkdir()
    repo = CodeRepo(root)
    repo.git("init", "--quiet", "-b", "main")
    plan = PLAN.replace("warmup = 0\n", f"warmup = 0\n{workload}")
    for name, text in (("bench.py", BENCH), ("knob_a.txt", "1.0\n"), ("knob_b.txt", "1.0\n"), ("notes.md", "notes\n"),
                       (".gitignore", ".optseq/\nbuilt.txt\n"), ("build.py", SETUP), ("optseq.toml", plan + extra)):
        (root / name).write_text(text, encoding="utf-8")
    repo.git("add", "-A")
    repo.git("commit", "--quiet", "-m", "base")
    for branch, path, text in (("alpha", "knob_a.txt", "1.5\n"), ("beta", "knob_b.txt", "1.4\n"),
                               ("gamma", "knob_a.txt", "1.1\n")):
        repo.git("branch", branch)
        repo.commit_on(branch, path, text, f"{branch}: {path} {text.strip()}")
    (root / "notes.md").write_text("notes\nwork in progress, not committed\n", encoding="utf-8")
    (root / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    return repo


def runs(repo: CodeRepo, db: Path) -> list[dict]:
    return json.loads(cli(repo, db, "runs", "--json").stdout)["runs"]


def states(repo: CodeRepo, db: Path) -> dict[str, str]:
    return {v["id"]: v["state"] for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}


@pytest.mark.slow  # a screen of three levers: every design run a process, in four worktrees
def test_a_screen_of_two_branch_levers_and_a_flag_launches_each_combination_and_confirms_the_combined_code(tmp_path):
    repo = make(tmp_path)
    touch_tracked(repo.root / "bench.py")  # an index entry a porcelain read would refresh and write back
    before, index = repo.snapshot(), index_stat(repo.root)
    main, alpha, beta = repo.commit("main"), repo.commit("alpha"), repo.commit("beta")
    db = tmp_path / "db"

    proc = cli(repo, db, "--run", "screen", "alpha", "beta", "wide")
    out = proc.stdout
    assert "each run in a worktree of the commit combining the code of its branch levers that are on (alpha, " \
           f"beta) on HEAD ({main[:7]})" in proc.stderr, proc.stderr
    assert "  alpha: adopt" in out and "  beta: adopt" in out and "  wide: adopt" in out, out
    assert "alpha × beta" in out, out  # beta gains only with alpha's code: the interaction, named
    screen = next(r for r in runs(repo, db) if r.get("kind") == "screen")
    code = screen["screen"]["code"]
    assert code["baseline"] == {"ref": "HEAD", "commit": main}
    assert code["levers"] == {"alpha": {"ref": "alpha", "commit": alpha}, "beta": {"ref": "beta", "commit": beta}}
    design = screen["screen"]["design"]["runs"]
    levels = {(a > 0, b > 0): code["runs"][i] for i, (a, b, _w) in enumerate(design)}
    both = levels[(True, True)]
    # each design run's commit: the baseline's, each branch's own (made on main: it holds the baseline), and one
    # commit merging the two, whose parents are theirs and whose tree holds both knobs
    assert levels[(False, False)] == main and levels[(True, False)] == alpha and levels[(False, True)] == beta
    assert repo.git("rev-parse", f"{both}^1", f"{both}^2").split() == [alpha, beta]
    assert repo.git("show", f"{both}:knob_a.txt") == "1.5" and repo.git("show", f"{both}:knob_b.txt") == "1.4"
    # every sample says the commit its launch ran, as its design run's record does
    samples = [json.loads(line) for line in Path(screen["samples_file"]).read_text().splitlines()]
    assert samples and all(s["commit"] == code["runs"][int(s["arm"].removeprefix("run-"))] for s in samples)
    log = Path(screen["log"]).read_text(encoding="utf-8")
    assert f"{both[:7]} block 1] code: alpha 1.5 beta 1.4" in log and f"{main[:7]} block 1] code: alpha 1.0" in log

    # the best combination confirmed against the stack by the paired test, on the combined commit
    confirmed = screen["screen"]["confirmed"]
    assert confirmed["outcome"] == "adopt" and {"alpha", "beta"} <= set(confirmed["levers"]), confirmed
    assert confirmed["commit"] == both
    assert f"confirmed {' + '.join(confirmed['levers'])} against the stack (run {confirmed['run']}, their code at " \
           f"{both[:7]}): adopt" in out, out
    check = next(r for r in runs(repo, db) if r["id"] == confirmed["run"])
    assert check["confirm"]["code"]["candidate"] == {"ref": "alpha + beta", "commit": both}
    assert check["confirm"]["code"]["baseline"]["commit"] == main
    check_log = Path(check["log"]).read_text(encoding="utf-8")
    assert f"[candidate {both[:7]} pair 0] code: alpha 1.5 beta 1.4" in check_log, check_log[:2000]
    assert f"[baseline {main[:7]} pair 0] code: alpha 1.0 beta 1.0" in check_log
    assert states(repo, db) == {"alpha": "adopted", "beta": "adopted", "wide": "adopted"}

    assert index_stat(repo.root) == index  # the user's .git/index: content, mtime, inode
    # the combinations' worktrees are optseq's, listed by doctor and pruned with the branch levers' own
    made = worktrees_git_knows(repo)
    assert {Path(p).name for p in made} == {main, alpha, beta, both}, made
    listed = cli(repo, db, "doctor").stdout
    assert all(commit[:7] in listed for commit in (main, alpha, beta, both)), listed
    assert "pruned" in cli(repo, db, "doctor", "--prune").stdout and not worktrees_git_knows(repo)
    # and its files, HEAD, branches and stash (read last: the snapshot's own `git status` may refresh the index)
    assert index_stat(repo.root) == index and repo.snapshot() == before

    # adopted by the screen, each branch waits to be merged, naming its own commit, and lands once merged
    levers = {v["id"]: v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}
    assert levers["alpha"]["note"] == f"adopted — merge alpha ({alpha[:7]}) to put it in the stack", levers["alpha"]
    assert levers["beta"]["branch"]["state"] == "unmerged"
    repo.git("merge", "--quiet", "--no-ff", "alpha", "-m", "merge alpha")
    merge = repo.commit("main")
    levers = {v["id"]: v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}
    assert levers["alpha"]["branch"]["state"] == "landed" and levers["alpha"]["branch"]["since"] == merge
    assert levers["beta"]["branch"]["state"] == "unmerged"


CONFLICTING = lever("gamma", 'candidate_ref = "gamma"')


def test_two_conflicting_branch_levers_named_are_refused_in_one_line_naming_both_and_the_file(tmp_path):
    repo = make(tmp_path, CONFLICTING)
    index, db = index_stat(repo.root), tmp_path / "db"
    proc = cli(repo, db, "--run", "screen", "alpha", "gamma", "wide", code=2)
    said = proc.stderr.strip()
    assert len(said.splitlines()) == 1, said
    assert said.startswith("optseq: --run screen: gamma cannot join the screen: its code (gamma, ") \
        and "conflicts with alpha's in knob_a.txt" in said, said
    assert not db.exists() or not runs(repo, db)
    assert index_stat(repo.root) == index and not worktrees_git_knows(repo)  # nothing checked out


def test_a_branch_lever_measured_against_another_baseline_is_refused_naming_both_baselines(tmp_path):
    repo = make(tmp_path, lever("onalpha", 'candidate_ref = "beta"\nbaseline_ref = "alpha"'))
    db = tmp_path / "db"
    proc = cli(repo, db, "--run", "screen", "beta", "onalpha", code=2)
    said = proc.stderr.strip()
    assert said == (f"optseq: --run screen: onalpha measures against alpha ({repo.commit('alpha')[:7]}), not the "
                    f"baseline of the screen's other branch levers, HEAD ({repo.commit('main')[:7]}): one screen's "
                    "runs share one baseline"), said
    assert not db.exists() or not runs(repo, db)


@pytest.mark.slow
def test_by_default_the_later_of_two_conflicting_branch_levers_is_left_out_and_said(tmp_path):
    repo = make(tmp_path, CONFLICTING, workload='setup = ["python", "build.py"]\n')
    db = tmp_path / "db"
    proc = cli(repo, db, "--run", "screen", "--budget", "16", code=None)
    assert "optseq: gamma: left out: cannot join the screen: its code (gamma, " in proc.stderr \
        and "conflicts with alpha's in knob_a.txt" in proc.stderr, proc.stderr
    screen = next(r for r in runs(repo, db) if r.get("kind") == "screen")
    assert screen["screen"]["levers"] == ["alpha", "beta", "wide"]
    assert any(line.startswith("gamma: left out: ") for line in screen["screen"]["left_out"])
    # the workload's setup ran once in each combination's worktree, before its first launch there
    made = {Path(p) for p in worktrees_git_knows(repo)}
    assert {p.name for p in made} == set(screen["screen"]["code"]["runs"]) and len(made) == 4, made
    for tree in made:
        assert json.loads(tree.with_name(tree.name + ".setup.json").read_text())["ok"] is True
        assert (tree / "built.txt").read_text() == (tree / "knob_a.txt").read_text()
    log = Path(screen["log"]).read_text(encoding="utf-8")
    assert sum(line.startswith("[optseq] setup of design run ") and " done in " in line
               for line in log.splitlines()) == 4, log[:3000]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_screen_ended_mid_run_leaves_nothing_running_and_the_users_tree_as_it_was(tmp_path, sig):
    repo = make(tmp_path)
    before, index, db = repo.snapshot(), index_stat(repo.root), tmp_path / "db"
    folder = tmp_path / "held"
    folder.mkdir()
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(repo.root / "optseq.toml"), "--db", str(db), "--run", "screen",
                             "alpha", "beta", "wide"], cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "HELD_DIR": str(folder), "HOLD_BLOCK": "2",
                                            "HELD_SCRIPT": str(HELD)})
    try:
        pids = _held(folder, lambda: proc.poll() is None, "design run")
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, out + err
        assert "1 block done" in out and "nothing decided" in out, out
    else:
        assert proc.returncode == -signal.SIGKILL
    _gone(pids)  # the launches' shims stop what a killed optseq left: waited for as an event, never a budget
    screen = next(r for r in runs(repo, db) if r.get("kind") == "screen")  # a killed one: recovered at this open
    assert screen["status"] == ("cancelled" if sig == signal.SIGTERM else "interrupted"), screen["status"]
    assert len(screen["screen"]["blocks"]) == 1
    assert set(states(repo, db).values()) == {"ready"}
    assert index_stat(repo.root) == index
    # no optseq holds a worktree now: doctor lists each one the screen made, and prune removes them
    known = worktrees_git_knows(repo)
    listed = cli(repo, db, "doctor").stdout
    assert known and all(Path(tree).name[:7] in listed for tree in known), (known, listed)
    cli(repo, db, "doctor", "--prune")
    assert not worktrees_git_knows(repo)
    # the user's files, HEAD, branches and stash (read last: the snapshot's own `git status` may refresh the index)
    assert index_stat(repo.root) == index and repo.snapshot() == before
