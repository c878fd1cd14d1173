"""A throwaway git repository a team might have: a bench script, a plan, a base commit on `main`, a branch `fast`
whose code is about 1.5× faster, and a branch `same` whose code changes nothing of its speed.

The bench's speed is a constant in its code (SPEED), so a commit's speed is what its code says; each run of it
draws a per-launch offset (sd 2%) and per-sample noise (1%) from a seed of its pass, arm and pair, and prints a
rounded rate: real launches' noise, the same numbers on a loaded machine, a verdict a test can assert."""
from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

BENCH = '''"""The team's benchmark: prints its throughput."""
import os
import random

SPEED = {speed}
seed = f"{{os.environ.get('OPTSEQ_PASS')}}:{{os.environ.get('OPTSEQ_ARM')}}:{{os.environ.get('OPTSEQ_PAIR')}}"
rng = random.Random(seed)
launch = rng.lognormvariate(0, 0.02)
rate = SPEED * launch * (1 + rng.gauss(0, 0.01))
print(f"commit code speed {{SPEED}}")
print(f"rate: {{rate:.4g}} items/s")
'''

PLAN = '''[plan]
title = "Branches"
as_of = 2026-12-04
lang = "en"
{plan_extra}
[workload]
command = ["python", "bench.py"]
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 1
{workload_extra}
[[levers]]
id = "fast"
title = "fast path"
kind = "infra"
timeout_s = 300
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
candidate_ref = "fast"

[[levers]]
id = "same"
title = "same speed"
kind = "speedup"
timeout_s = 300
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
candidate_ref = "same"

[[levers]]
id = "later"
title = "on top of fast"
kind = "speedup"
requires = "fast:adopt"
remeasure_when = ["fast"]
timeout_s = 300
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
candidate_env = {{ LATER = "1" }}
{levers_extra}'''

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass
class CodeRepo:
    root: Path

    def git(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=cwd or self.root, capture_output=True, text=True,
                              env={**os.environ, **GIT_ENV}, timeout=60)
        assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
        return proc.stdout.strip()

    def commit(self, ref: str) -> str:
        return self.git("rev-parse", ref)

    def commit_on(self, branch: str, path: str, text: str, message: str) -> str:
        """A commit on `branch` that writes `path`, made in a worktree of the test's own: the user's working tree
        (checked out on main, with its uncommitted change) is left as it is."""
        side = self.root.parent / f"side-{branch}"
        self.git("worktree", "add", "--quiet", str(side), branch)
        (side / path).write_text(text, encoding="utf-8")
        self.git("add", path, cwd=side)
        self.git("commit", "--quiet", "-m", message, cwd=side)
        self.git("worktree", "remove", str(side))
        return self.commit(branch)

    def snapshot(self) -> dict:
        """What the user owns, byte for byte: every file of the working tree (not .git), the index's entries,
        HEAD, the branches and the stash."""
        files = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root)
            if rel.parts[0] in (".git", ".optseq") or not path.is_file():
                continue
            files[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
        return {"files": files, "index": self.git("ls-files", "--stage"), "head": self.git("symbolic-ref", "HEAD"),
                "branches": self.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"),
                "stash": self.git("stash", "list"), "status": self.git("status", "--porcelain")}


def make_repo(tmp_path: Path, *, plan_extra: str = "", workload_extra: str = "", levers_extra: str = "",
              dirty: bool = True) -> CodeRepo:
    """The repository under tmp_path/repo, on main; with `dirty`, an uncommitted change to a tracked file
    (notes.md) and an untracked file, as a working tree mid-work has."""
    root = tmp_path / "repo"
    root.mkdir()
    repo = CodeRepo(root)
    repo.git("init", "--quiet", "-b", "main")
    (root / "bench.py").write_text(BENCH.format(speed=100), encoding="utf-8")
    (root / "optseq.toml").write_text(PLAN.format(plan_extra=plan_extra, workload_extra=workload_extra,
                                                  levers_extra=levers_extra), encoding="utf-8")
    (root / "notes.md").write_text("notes\n", encoding="utf-8")
    (root / ".gitignore").write_text(".optseq/\n", encoding="utf-8")
    repo.git("add", "-A")
    repo.git("commit", "--quiet", "-m", "base")
    repo.git("branch", "fast")
    repo.git("branch", "same")
    repo.commit_on("fast", "bench.py", BENCH.format(speed=150), "fast path: 1.5x")
    repo.commit_on("same", "bench.py", BENCH.format(speed=100) + "# tidied, same speed\n", "same speed")
    if dirty:
        (root / "notes.md").write_text("notes\nwork in progress, not committed\n", encoding="utf-8")
        (root / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    return repo
