"""A killed optseq's `git worktree add` never breaks a later run: SIGKILL of the real CLI while git is held inside
the checkout (a smudge filter of the test repository's, or its post-checkout hook, blocks on a file the test
controls), then later runs of the same commit, with the orphaned git let go before, during or after them. A seeded
loop of counted iterations; every later run must succeed."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.code_repo import make_repo
from tests.conftest import OPTSEQ
from tests.state.code.test_branch_levers import cli

HOLD = '''#!/bin/sh
# Held at the HOLD_AT-th file git smudges (or in post-checkout when HOLD_AT=hook), only when $HOLD is set.
if [ -n "$HOLD" ] && [ "$1" = "$HOLD_WHERE" ]; then
  n=$(cat "$HOLD.count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$HOLD.count"
  if [ "$n" = "$HOLD_AT" ] || [ "$HOLD_AT" = hook ]; then
    echo $$ > "$HOLD.in"
    while [ ! -e "$HOLD.go" ]; do sleep 0.01; done
  fi
fi
[ "$1" = smudge ] && exec cat
exit 0
'''

REAPER = '''
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: optseq's orphans become ours
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
code = None
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        break
    if pid == child.pid:
        code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
'''
"""Runs optseq and outlives every process it leaves: its exit (with optseq's code) is the test's event that the
orphaned git ended too."""

WAIT_GUARD_S = 300
"""Only so that a broken run fails instead of hanging: the verdict waits on files and exits, never on time."""


def until(event, what: str, alive=None) -> None:
    deadline = time.monotonic() + WAIT_GUARD_S
    while not event():
        assert alive is None or alive(), f"ended before {what}"
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.01)


class Held:
    """The CLI started under a reaper, with git held inside its checkout at the point `hold` names."""

    def __init__(self, repo, db: Path, token: Path, where: str, at: str):
        env = {**os.environ, "HOLD": str(token), "HOLD_WHERE": where, "HOLD_AT": at}
        self.token = token
        self.reaper = subprocess.Popen([sys.executable, "-c", REAPER, *OPTSEQ, "--plan", str(repo.root / "optseq.toml"),
                                        "--db", str(db), "check", "fast"], cwd=repo.root, env=env,
                                       stdout=subprocess.PIPE, text=True)
        self.pid = int(self.reaper.stdout.readline())
        until(lambda: token.with_name(token.name + ".in").exists(), f"git held at {where} {at}",
              alive=lambda: self.reaper.poll() is None)

    def release(self) -> None:
        self.token.with_name(self.token.name + ".go").write_text("go")

    def wait(self) -> int:
        """Until every process of the run, an orphaned git included, has ended: optseq's exit code."""
        return self.reaper.wait(timeout=WAIT_GUARD_S)


@pytest.mark.slow  # ~25 iterations of three CLI runs each
def test_sigkill_inside_git_worktree_add_never_breaks_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "cache"))
    repo = make_repo(tmp_path, dirty=False)
    hold = tmp_path / "hold.sh"
    hold.write_text(HOLD, encoding="utf-8")
    hold.chmod(0o755)
    repo.git("config", "filter.hold.smudge", f"{hold} smudge")
    (repo.root / ".git" / "hooks" / "post-checkout").write_text(f"#!/bin/sh\nexec {hold} hook\n")
    (repo.root / ".git" / "hooks" / "post-checkout").chmod(0o755)
    (repo.root / ".gitattributes").write_text("* filter=hold\n", encoding="utf-8")
    repo.git("add", ".gitattributes")
    repo.git("commit", "--quiet", "-m", "every file through the filter")
    db = tmp_path / "db"
    rng = random.Random(38)
    seen = []
    for i in range(24):
        # a commit of its own each time: the baseline (HEAD) is checked out anew, the candidate's is kept
        repo.git("commit", "--quiet", "--allow-empty", "-m", f"iteration {i}")
        where, at = rng.choice([("smudge", "1"), ("smudge", "2"), ("smudge", "4"), ("hook", "hook")])
        when = rng.choice(["before", "during", "after"])
        seen.append((where, at, when))
        killed = Held(repo, db, tmp_path / f"a{i}", where, at)
        os.kill(killed.pid, signal.SIGKILL)  # optseq only: its git lives on, held, as an orphan
        if when == "before":
            killed.release()
            assert killed.wait() == 128 + signal.SIGKILL
            cli(repo, db, "check", "fast")
        elif when == "during":  # the next run held in its own checkout while the orphan finishes
            nxt = Held(repo, db, tmp_path / f"b{i}", "smudge", "1")
            killed.release()
            killed.wait()
            nxt.release()
            assert nxt.wait() == 0, (i, where, at, when)
            assert "FAILED" not in cli(repo, db, "check", "fast").stdout
        else:
            cli(repo, db, "check", "fast")
            killed.release()
            killed.wait()
        out = cli(repo, db, "check", "fast").stdout
        assert "FAILED" not in out and "commit code speed 100" in out, (i, where, at, when, out)
    assert {w for *_, w in seen} == {"before", "during", "after"}
    cli(repo, db, "--run", "fast")  # a whole run, after all that
    listed = cli(repo, db, "doctor").stdout
    assert "half-made" not in listed and "dirty" not in listed, listed
    assert not list((tmp_path / "cache").glob("*/*.making-*")), "an aside left behind"
    assert "prunable" not in repo.git("worktree", "list", "--porcelain")
