"""A lever history built through the real API: a git repository holding a one-lever plan, and runs of a stand-in
lever whose true ratio the environment sets, one commit before each run, so every run measured its own commit."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from optseq.state.sequencer import Sequencer
from tests.state.one_lever import one_lever_plan

ENV_SPEED = Path(__file__).parent / "lever_scripts" / "env_speed.py"
RULE = 'metric = "items_per_s", min_speedup = 1.1, repeats = 5, max_repeats = 60'


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def build(repo: Path, db: Path, ratios: list[float], between: int = 1) -> tuple[Path, list[str]]:
    """Run the lever once per ratio, in order, `between` commits made before each run; returns the plan and the
    commit each run measured."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    plan = one_lever_plan(repo, ["python", str(ENV_SPEED)], rule=RULE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plan")
    commits = []
    saved = os.environ.get("STEP_LEVER_RATIO")
    try:
        for k, ratio in enumerate(ratios):
            for j in range(between):
                (repo / "speed.txt").write_text(f"run {k} commit {j}\n", encoding="utf-8")
                git(repo, "add", "speed.txt")
                git(repo, "commit", "-q", "-m", f"run {k} commit {j}")
            commits.append(git(repo, "rev-parse", "HEAD"))
            os.environ["STEP_LEVER_RATIO"] = str(ratio)
            with Sequencer.open(plan, db, mode="write") as seq:
                report = seq.run_lever("lever")
                assert report.status == "succeeded", report
    finally:
        if saved is None:
            os.environ.pop("STEP_LEVER_RATIO", None)
        else:
            os.environ["STEP_LEVER_RATIO"] = saved
    return plan, commits
