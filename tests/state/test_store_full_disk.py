"""A full disk: reads go on (what they would write waits for a writer), writes fail in one line, nothing is lost.
On a real tmpfs filled to its last byte; skipped where this process cannot mount one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.store.store import Store
from tests.conftest import DEFAULT_PLAN, OPTSEQ


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Every free byte of the disk taken by one file (returned, to free it again)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    return subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, timeout=300)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_reads_go_on_while_the_disk_is_full_and_the_run_waits_for_a_writer(small_disk):
    db = small_disk / "state"
    assert cli(db, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "ci").returncode == 0
    with Store.open(db) as s:  # a run whose optseq died: recovering it is a write
        run = s.append("runs", {"lever": "option_b", "status": "running", "pid": dead_pid()})
    before = {p.name: p.read_bytes() for p in (db / "journal").glob("*.jsonl")}
    filler = fill(small_disk)

    for args in (("status",), ("runs", "--json"), ("export",), ("status", "--json")):
        proc = cli(db, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "read-only until it can write" in proc.stderr, (args, proc.stderr)
    runs = json.loads(cli(db, "runs", "--json").stdout)["runs"]
    assert [r["status"] for r in runs if r["id"] == run["id"]] == ["running"]  # not recovered by a reader

    refused = cli(db, "fact", "eval_dense", "true")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "No space left on device" in refused.stderr
    for name, raw in before.items():  # nothing committed is lost (a failed commit's line is an uncounted tail)
        assert (db / "journal" / name).read_bytes().startswith(raw), name

    filler.unlink()
    assert cli(db, "fact", "eval_dense", "true").returncode == 0  # a writer, once there is room ...
    runs = json.loads(cli(db, "runs", "--json").stdout)["runs"]
    assert [r["status"] for r in runs if r["id"] == run["id"]] == ["interrupted"]  # ... recovers the run
