"""The flags example plan: it validates, `check` shows both arms, and its levers compose on one workload command."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ, ROOT

EXAMPLE = ROOT / "configs" / "examples" / "flags"
PLAN = EXAMPLE / "plan.toml"
HANG_GUARD_S = 600


def optseq(*args, db):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}
    proc = subprocess.run([*OPTSEQ, "--plan", str(PLAN), "--db", str(db), *args], env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_flags_example_validates(tmp_path):
    proc = optseq("validate", str(PLAN), db=tmp_path / "db")
    assert proc.returncode == 0 and "ok (3 levers" in proc.stdout, proc.stdout + proc.stderr


def test_check_shows_each_arms_argv_and_number_and_records_nothing(tmp_path):
    db = tmp_path / "db"
    proc = optseq("check", "builtin_sum", db=db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "baseline: argv " in out and "bench.py --impl=loop --chunk=64 --copy=1" in out
    assert "candidate: argv " in out and "bench.py --impl=builtin --chunk=64 --copy=1" in out
    assert f"baseline: cwd {EXAMPLE}" in out and "candidate: env OPTSEQ_ARM=candidate" in out
    assert "baseline: items_per_s = " in out and "candidate: guard checksum = 350003" in out
    assert "candidate: took " in out
    assert not db.exists()  # no store made for it either (a read of a --db with no store is refused)
    assert "no store at" in optseq("runs", "--json", db=db).stderr


@pytest.mark.slow  # three command-pair runs of a real (tiny) benchmark through the CLI
def test_the_levers_compose_on_the_workload(tmp_path):
    db = tmp_path / "db"
    optseq("decide", "builtin_sum", "adopt", "--why", "test: on the stack by hand", db=db)
    proc = optseq("--run", "big_chunks", "--json", db=db)
    assert proc.returncode in (0, 1), proc.stderr
    run = json.loads(optseq("runs", "--json", db=db).stdout)["runs"][0]
    assert run["arms"]["baseline"][-3:] == ["--impl=builtin", "--chunk=64", "--copy=1"]
    assert run["arms"]["candidate"][-3:] == ["--impl=builtin", "--chunk=4096", "--copy=1"]
    log = Path(run["log"]).read_text()
    assert "[baseline pair 0] config: impl=builtin chunk=64 copy=1" in log
    assert "[candidate pair 0] config: impl=builtin chunk=4096 copy=1" in log
