"""Paths that are not what a store or a plan should be: each refused in one line with exit 2, never a traceback or
a hang (issue 33, point 8). The real CLI in a subprocess; its timeout only guards the suite against a hang."""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import DEFAULT_PLAN, OPTSEQ

HANG_GUARD_S = 120


def cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_DB", "OPTSEQ_PLAN")}
    return subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=HANG_GUARD_S, stdin=subprocess.DEVNULL)


def refused(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("optseq: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("make, says", [
    (lambda p: p.symlink_to(p), "a link that leads nowhere (Too many levels of symbolic links)"),
    (lambda p: p.write_text("not a store\n"), "a file"),
])
def test_a_db_that_is_no_folder_is_refused_by_reads_and_writes(tmp_path, make, says):
    db = tmp_path / "db"
    make(db)
    plan = ("--plan", str(DEFAULT_PLAN), "--db", str(db))
    assert refused(cli(tmp_path, *plan, "status")) == f"optseq: no store at {db} (from --db): it is {says}, not a " \
                                                      "folder; check the path"
    for write in (("record", "julia_port", "torch_jl", "c4", "fail"), ("fact", "eval_dense", "true")):
        assert refused(cli(tmp_path, *plan, *write)) == f"optseq: store directory {db} is {says}, not a folder"
    assert db.is_symlink() or db.read_text() == "not a store\n"  # left as it was


def test_a_plan_that_is_a_fifo_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "plan.toml"
    os.mkfifo(fifo)  # no writer: opening it to read would wait forever
    for args in (("--plan", str(fifo), "status"), ("validate", str(fifo)), ("--plan", str(fifo), "export")):
        assert refused(cli(tmp_path, *args)) == f"optseq: {fifo}: not a regular file (a FIFO): not a plan", args


def test_a_plan_that_is_a_folder_or_a_loop_is_refused(tmp_path):
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert refused(cli(tmp_path, "validate", str(tmp_path))) == \
        f"optseq: {tmp_path}: not a regular file (a folder): not a plan"
    assert refused(cli(tmp_path, "validate", str(loop))) == \
        f"optseq: {loop}: cannot read (Too many levels of symbolic links)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root looks into any folder")
def test_a_db_this_user_may_not_look_into_is_refused(tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    db.chmod(0)
    try:
        line = refused(cli(tmp_path, "--plan", str(DEFAULT_PLAN), "--db", str(db), "status"))
    finally:
        db.chmod(0o755)
    assert line == f"optseq: cannot look into the store directory {db}: Permission denied"
