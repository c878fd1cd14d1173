"""Build the branch levers example's repository: a bench on `main`, a branch `builtin-sum` that makes it several times
faster, a branch `tidy` that changes nothing of its speed, and the plan (optseq.toml). Standard library and git only.

    python configs/examples/branch/make_repo.py /tmp/optseq-branch-demo
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOP = "        for x in data[i:i + CHUNK]:\n            s += x\n"
CHANGES = {
    "builtin-sum": (LOOP, "        s += sum(data[i:i + CHUNK])\n", "sum() per chunk instead of a Python loop"),
    "tidy": (LOOP, "        for x in data[i:i + CHUNK]:  # one chunk at a time\n            s += x\n",
             "tidy the summing loop"),
}
ENV = {"GIT_AUTHOR_NAME": "optseq demo", "GIT_AUTHOR_EMAIL": "demo@example.com", "GIT_COMMITTER_NAME": "optseq demo",
       "GIT_COMMITTER_EMAIL": "demo@example.com"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, env={**os.environ, **ENV}, stdout=subprocess.DEVNULL)


def build(root: Path) -> None:
    root.mkdir(parents=True)
    git(root, "init", "--quiet", "-b", "main")
    bench = (HERE / "bench.py").read_text(encoding="utf-8")
    (root / "bench.py").write_text(bench, encoding="utf-8")
    (root / "optseq.toml").write_text((HERE / "plan.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (root / ".gitignore").write_text(".optseq/\n__pycache__/\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "the chunked sum and its plan")
    for branch, (old, new, message) in CHANGES.items():
        git(root, "checkout", "--quiet", "-b", branch, "main")
        (root / "bench.py").write_text(bench.replace(old, new), encoding="utf-8")
        git(root, "commit", "--quiet", "-am", message)
    git(root, "checkout", "--quiet", "main")


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "/tmp/optseq-branch-demo").resolve()
    if root.exists():
        print(f"make_repo.py: {root} exists; give a new folder", file=sys.stderr)
        return 2
    build(root)
    print(f"built {root}: main, builtin-sum (faster), tidy (same speed); then, from there:\n"
          "  optseq --run builtin_sum         # adopted, and waits for its merge\n"
          "  optseq compare main builtin-sum  # the commit gate: not slower\n"
          "  git merge --no-ff builtin-sum -m 'merge builtin-sum' && optseq status")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
