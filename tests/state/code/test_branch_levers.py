"""Levers that are code, through the CLI as a team uses it: a branch measured against HEAD in worktrees of optseq's
own, the commit gate (`optseq compare`), an adopted branch that must be merged to join the stack, a moved branch,
and the user's working tree left byte for byte as it was. On a throwaway repository (tests/code_repo.py) whose
bench's speed is its code's."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.code_repo import BENCH, CodeRepo, make_repo
from tests.conftest import OPTSEQ


def cli(repo: CodeRepo, db: Path, *args: str, code: int | None = 0, env: dict | None = None,
        plan: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan or repo.root / "optseq.toml"), "--db", str(db), *args],
                          cwd=repo.root, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert "Traceback" not in proc.stderr, proc.stderr
    assert code is None or proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def status(repo: CodeRepo, db: Path) -> dict:
    return {v["id"]: v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}


def worktrees_git_knows(repo: CodeRepo) -> set[str]:
    listed = repo.git("worktree", "list", "--porcelain").splitlines()
    return {line.split(" ", 1)[1] for line in listed if line.startswith("worktree ")} - {str(repo.root)}


@pytest.mark.slow  # lever runs and compares launch every arm as a process
def test_a_faster_branch_is_adopted_one_of_the_same_speed_is_not_and_compare_tells_them_apart(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    before = repo.snapshot()
    main, fast, same = repo.commit("main"), repo.commit("fast"), repo.commit("same")

    ran = json.loads(cli(repo, db, "--run", "fast", "--json").stdout)["runs"][0]
    assert ran["decision"] == "adopt", ran
    ran = json.loads(cli(repo, db, "--run", "same", "--json", code=None).stdout)["runs"][0]
    assert ran["decision"] != "adopt" and ran["status"] == "succeeded", ran

    runs = json.loads(cli(repo, db, "runs", "--json").stdout)["runs"]
    for run, candidate in zip(runs, (fast, same)):
        # each run records the commits it measured, and each arm's log says the commit it ran, line by line
        assert run["code"]["baseline"] == {"ref": "HEAD", "commit": main}
        assert run["code"]["candidate"]["commit"] == candidate
        log = Path(run["log"]).read_text(encoding="utf-8")
        assert f"[baseline {main[:7]} pair 0]" in log and f"[candidate {candidate[:7]} pair 0]" in log
        assert "commit code speed 100" in log  # the baseline is main's code, not the working tree's

    step_summary, summary = tmp_path / "step-summary.md", tmp_path / "compare.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    ok = cli(repo, db, "compare", "main", "fast", "--summary", str(summary), code=0,
             env={"GITHUB_STEP_SUMMARY": str(step_summary)})
    assert ok.stdout.startswith("compare ") and ": not slower: fast (" in ok.stdout, ok.stdout
    # the markdown a CI job shows: verdict, both commits, the ratio and its interval, every pair, how to reproduce
    written = summary.read_text(encoding="utf-8")
    assert step_summary.read_text(encoding="utf-8") == "earlier step\n" + written  # appended, as GitHub expects
    assert written.startswith("## optseq compare: ✅ not slower")
    assert f"HEAD `fast` (`{fast[:7]}`) against BASE `main` (`{main[:7]}`)" in written
    assert "| rate | 1.5" in written and "pairs of launches" in written
    assert f"Reproduce: `optseq --plan {repo.root / 'optseq.toml'} compare main fast --tolerance 5%`" in written
    slow = cli(repo, db, "compare", "fast", "main", "--json", code=7)
    verdict = json.loads(slow.stdout)
    assert verdict["verdict"] == "slower" and verdict["exit_code"] == 7
    assert verdict["base"]["commit"] == fast and verdict["head"]["commit"] == main
    assert verdict["summary"]["stats"]["ci_high"] < 1 / 1.05  # slower than the 5% tolerance, with 95% confidence

    # a compare is a run of no lever: listed, moving nothing
    listed = cli(repo, db, "runs").stdout
    assert "compare" in listed and "HEAD main" in listed and "not slower" in listed
    assert status(repo, db)["fast"]["state"] == "adopted" and status(repo, db)["same"]["state"] == "rejected"

    assert repo.snapshot() == before  # the user's files, index, HEAD, branches, stash: untouched
    listed = cli(repo, db, "doctor").stdout
    assert worktrees_git_knows(repo), "the runs used worktrees"
    for path in worktrees_git_knows(repo):  # every worktree optseq made is one doctor lists
        assert Path(path).name[:7] in listed, (path, listed)
    pruned = cli(repo, db, "doctor", "--prune").stdout
    assert "pruned" in pruned and not worktrees_git_knows(repo)  # and git forgot them too
    assert repo.snapshot() == before


@pytest.mark.slow
def test_a_setup_that_fails_fails_the_run_in_one_line_naming_ref_commit_and_its_last_line(tmp_path):
    repo = make_repo(tmp_path, workload_extra='setup = ["python", "build.py"]\n', levers_extra='''
[[levers]]
id = "broken"
title = "a branch whose build breaks"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }
[levers.arms]
candidate_ref = "broken"
''', dirty=False)
    (repo.root / "build.py").write_text("print('building the native part')\n", encoding="utf-8")
    repo.git("add", "build.py")
    repo.git("commit", "--quiet", "-m", "a build step")
    repo.git("branch", "broken")
    broken = repo.commit_on("broken", "build.py", "import sys\nprint('compiling fastpath.c')\n"
                            "print('fastpath.c:3: error: missing header fastpath.h')\nsys.exit(2)\n", "breaks")
    (repo.root / "notes.md").write_text("uncommitted\n", encoding="utf-8")
    db = tmp_path / "db"
    before = repo.snapshot()

    failed = cli(repo, db, "--run", "broken", code=1)
    line = next(l for l in failed.stdout.splitlines() if l.startswith("run 1 broken: failed"))
    assert f"setup of candidate broken ({broken[:7]}) failed: `python build.py` exited 2; last output line: " \
           f"'fastpath.c:3: error: missing header fastpath.h'" in line, line
    assert repo.snapshot() == before
    # the setup's log is kept beside its worktree, and doctor lists that worktree
    log = line.split("its log: ", 1)[1].rstrip(")")
    assert "missing header" in Path(log).read_text(encoding="utf-8")
    assert broken[:7] in cli(repo, db, "doctor").stdout


@pytest.mark.slow
def test_adopted_then_merged_then_moved_each_shows_in_status_and_the_export(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    fast = repo.commit("fast")
    cli(repo, db, "--run", "fast")
    cli(repo, db, "--run", "same", code=None)

    # adopted, not merged: not in the stack, and what requires it waits, saying what to do
    levers = status(repo, db)
    assert levers["fast"]["branch"]["state"] == "unmerged"
    assert levers["fast"]["note"] == f"adopted — merge fast ({fast[:7]}) to put it in the stack"
    assert levers["later"]["state"] == "blocked"
    assert levers["later"]["why_blocked"] == [f"fast is adopted — merge fast ({fast[:7]}) to put it in the stack"]
    doc = cli(repo, db, "export", "--lang", "en").stdout
    assert f"merge fast ({fast[:7]}) to put it in the stack" in doc
    assert "needs fast adopted" not in doc and f"fast adopted, needs fast ({fast[:7]}) merged" in doc

    # merged (as the user does it, beside an uncommitted change): the next optseq sees it land
    repo.git("merge", "--quiet", "--no-ff", "fast", "-m", "merge fast")
    merge = repo.commit("main")
    levers = status(repo, db)
    assert levers["fast"]["branch"]["state"] == "landed" and levers["fast"]["branch"]["since"] == merge
    assert levers["fast"]["note"] == f"in the code since {merge[:7]}"
    assert levers["later"]["state"] == "ready"
    assert f"in the code since {merge[:7]}" in cli(repo, db, "export", "--lang", "en").stdout
    refused = cli(repo, db, "--run", "fast", code=3)
    assert f"fast is in the code since {merge[:7]}" in refused.stderr

    # the branch of a measured lever moved: its numbers are stale, naming how
    same_was = repo.commit("same")
    same_now = repo.commit_on("same", "notes.md", "more work\n", "more on same")
    levers = status(repo, db)
    assert levers["same"]["state"] == "stale"
    assert levers["same"]["stale_reason"].startswith(
        f"same moved 1 commit since run 2 ({same_was[:7]} → {same_now[:7]})"), levers["same"]
    assert f"same moved 1 commit since run 2" in cli(repo, db, "export", "--lang", "en").stdout
    korean = cli(repo, db, "export", "--lang", "ko").stdout  # the doc's language, from the code room's table
    assert f"run 2 이후 same에 커밋 1개 추가 ({same_was[:7]} → {same_now[:7]})" in korean
    assert "moved 1 commit" not in korean

    # the machine is a replay of the records: a plan edit (no snapshot of it) replays them all to the same state
    plan = repo.root / "optseq.toml"
    plan.write_text(plan.read_text(encoding="utf-8").replace('title = "on top of fast"', 'title = "atop fast"'),
                    encoding="utf-8")
    replayed = status(repo, db)
    assert replayed["fast"]["note"] == f"in the code since {merge[:7]}" and replayed["later"]["state"] == "ready"

    # taken out of the baseline again (a reset), it leaves the stack and what stood on it waits again
    repo.git("reset", "--quiet", "--keep", "HEAD~1")
    levers = status(repo, db)
    assert levers["fast"]["branch"]["state"] == "unmerged" and levers["later"]["state"] == "blocked"


def test_refs_that_name_nothing_and_code_outside_git_are_refused_in_one_line(tmp_path):
    repo = make_repo(tmp_path, levers_extra='''
[[levers]]
id = "typo"
title = "a branch that is not there"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2 }
[levers.arms]
candidate_ref = "fsat"
''')
    db = tmp_path / "db"
    refused = cli(repo, db, "--run", "typo", code=2)
    assert refused.stderr.strip().splitlines() == [
        f"optseq: typo: candidate_ref 'fsat' names no commit in {repo.root} (`git branch -a` lists the branches; "
        "a remote one is origin/NAME, fetched first)"]
    assert "names no commit" in cli(repo, db, "compare", "main", "nope", code=2).stderr
    assert "--tolerance: tolerance '30'" in cli(repo, db, "compare", "main", "fast", "--tolerance", "30",
                                                code=2).stderr

    # the same plan and bench outside any repository, and in a repository with no commit yet
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bench.py").write_text(BENCH.format(speed=100), encoding="utf-8")
    (outside / "optseq.toml").write_text((repo.root / "optseq.toml").read_text(encoding="utf-8"), encoding="utf-8")
    lone = CodeRepo(outside)
    refused = cli(lone, tmp_path / "db2", "--run", "fast", code=2)
    assert "is not in a git repository" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    lone.git("init", "--quiet")
    refused = cli(lone, tmp_path / "db3", "compare", "main", code=2)
    assert "has no commits yet" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "db3" / "journal" / "runs.jsonl").exists()  # nothing was recorded


@pytest.mark.slow
def test_a_squash_merged_branch_lands_where_the_user_says_and_only_in_the_baselines_history(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    cli(repo, db, "--run", "fast")
    repo.git("merge", "--quiet", "--squash", "fast")
    repo.git("commit", "--quiet", "-m", "fast path (squashed)")
    squash = repo.commit("main")
    assert status(repo, db)["fast"]["branch"]["state"] == "unmerged"  # git cannot tie the copy to the branch
    assert "needs a rationale" in cli(repo, db, "landed", "fast", squash, code=2).stderr
    assert "is not in HEAD's history" in cli(repo, db, "landed", "fast", "fast", "--why", "x", code=2).stderr
    said = cli(repo, db, "landed", "fast", "HEAD", "--why", "squash-merged in #12").stdout
    assert said.strip() == f"fast: in the code since {squash[:7]} (by hand: squash-merged in #12)"
    levers = status(repo, db)
    assert levers["fast"]["note"] == f"in the code since {squash[:7]}" and levers["later"]["state"] == "ready"


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["warn", "stale"])
def test_a_baseline_that_moved_warns_or_under_code_changes_stale_makes_the_run_stale(tmp_path, policy):
    repo = make_repo(tmp_path, plan_extra=f'code_changes = "{policy}"\n')
    db = tmp_path / "db"
    cli(repo, db, "--run", "same", code=None)
    was = repo.commit("main")
    repo.git("commit", "--quiet", "--allow-empty", "-m", "the team's next commit")  # HEAD moves: the baseline
    said = f"the baseline moved: HEAD moved 1 commit since run 1 ({was[:7]} → {repo.commit('main')[:7]})"
    same = status(repo, db)["same"]
    if policy == "stale":
        assert same["state"] == "stale" and same["stale_reason"] == said
        korean = cli(repo, db, "export", "--lang", "ko").stdout
        assert f"baseline이 바뀜: run 1 이후 HEAD에 커밋 1개 추가 ({was[:7]} → {repo.commit('main')[:7]})" in korean
    else:
        assert same["state"] == "rejected" and same["warnings"] == [said] and same["note"] == said
