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



def test_a_run_started_on_a_full_disk_is_refused_in_one_line_and_runs_once_there_is_room(small_disk):
    db = small_disk / "state"
    for args in (("record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "ci"),
                 ("plan", "option_b", "docs/plans/option_b.md", "--missing-ok")):
        assert cli(db, *args).returncode == 0
    before = {p.relative_to(db): p.read_bytes() for p in db.rglob("*") if p.is_file()}
    filler = fill(small_disk)
    refused = cli(db, "--run", "option_b")
    # the run's lock cannot be written: refused before anything starts, in one line naming the file
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert lines[0].startswith("option_b: starting run")  # said at once, before anything can fail
    assert lines[1:] == [
        f"optseq: {db / 'runs' / 'locks' / 'option_b.lock'}: cannot take the lock: No space left on device"]
    for name, raw in before.items():  # nothing stored is lost or changed
        assert (db / name).read_bytes() == raw, name
    filler.unlink()
    status = json.loads(cli(db, "status", "--json").stdout)
    assert next(v for v in status["levers"] if v["id"] == "option_b")["state"] == "ready"  # no run began


FILL = """
import os


def fill():
    filler = os.environ["FILL_ME"] + "/filler"
    if not os.path.exists(filler):
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        for size in (65536, 4096, 1):
            try:
                while os.write(fd, b"\\0" * size):
                    pass
            except OSError:
                pass
        os.close(fd)
"""
"""The disk under FILL_ME made full, to its last byte, once."""

ARM = FILL + """
import os, sys
# the first arm run fills the disk the store's journals are on (its run was recorded already): the run measures
# every pair, and only its end cannot be written
fill()
fast = os.environ.get("FAST") == "1"
print(f"rate: {150.0 if fast else 100.0} items/s")
"""


def test_a_run_whose_end_cannot_be_written_is_finished_from_its_logs_by_the_next_writer(tmp_path, small_disk):
    db = tmp_path / "state"
    (tmp_path / "arm.py").write_text(ARM)
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[plan]
title = "Full disk"
as_of = 2026-12-01
lang = "en"

[[levers]]
id = "fast"
title = "Fast"
kind = "speedup"
timeout_s = 120
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
[levers.arms]
command = ["python", "{tmp_path / 'arm.py'}"]
candidate_env = {{ FAST = "1" }}
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0
""")
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(plan), "FILL_ME": str(small_disk)}
    Store.open(db, mode="write").close()  # a store given by hand ($OPTSEQ_DB) must exist for a read
    assert subprocess.run([*OPTSEQ, "status"], env=env, capture_output=True).returncode == 0
    journal = db / "journal"  # the journals on the small disk, the run's logs beside the store as usual
    for f in journal.iterdir():
        (small_disk / f.name).write_bytes(f.read_bytes())
        f.unlink()
    journal.rmdir()
    journal.symlink_to(small_disk)

    run = subprocess.run([*OPTSEQ, "--run", "fast"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "run 1 fast: measured (1 pass), but its end cannot be recorded" in run.stderr, run.stderr
    assert "No space left on device" in run.stderr and "finishes the run from them" in run.stderr

    (small_disk / "filler").unlink()
    status = subprocess.run([*OPTSEQ, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    assert "finished from its passes' logs" in status.stderr, status.stderr
    assert {v["id"]: v["state"] for v in json.loads(status.stdout)["levers"]} == {"fast": "adopted"}
    (record,) = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                          timeout=300).stdout)["runs"]
    assert record["status"] == "succeeded" and record["verdict"] == "adopt" and record["n_samples"] == 12
    assert "finished from its passes' logs" in record["note"]


FILL_IN_PASS_3 = FILL + """
import os, runpy, sys
# the third launch fills the disk under the store's hot file and journals (the run was recorded already, and its
# folder is on another disk): its later passes' starts cannot be recorded, nor its end
if os.environ.get("OPTSEQ_PASS") == "3":
    fill()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def bench_plan(tmp_path: Path) -> Path:
    """A bench lever whose run takes six launches (a first look needs them), filling the disk in its third."""
    from tests.state.one_lever import one_lever_plan

    (tmp_path / "fill.py").write_text(FILL_IN_PASS_3)
    ab = Path(__file__).parents[1] / "lever_scripts" / "ab.py"
    return one_lever_plan(tmp_path, ["python", str(tmp_path / "fill.py"), str(ab), "--ratio", "1.5"], timeout=120)


def test_a_disk_that_fills_in_pass_3_of_six_is_finished_from_the_six_passes_logs_once_there_is_room(tmp_path,
                                                                                                      small_disk):
    db = small_disk / "state"
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(bench_plan(tmp_path)), "FILL_ME": str(small_disk)}
    Store.open(db, mode="write").close()
    runs = tmp_path / "runs"  # logs and samples on a disk with room, the hot file and journals on the full one
    (db / "runs").rmdir()
    runs.mkdir()
    (db / "runs").symlink_to(runs)

    run = subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("optseq:")]
    assert len(errors) == 1 and "run 1 lever: measured (6 passes), but its end cannot be recorded" in errors[0], errors
    assert "No space left on device" in errors[0] and "finishes the run from them" in errors[0]
    assert "pass 4's start cannot be recorded" in run.stderr  # said, and the pass went on
    for n in range(1, 7):  # every pass ran whole and logged, its samples with it
        assert '"event": "done"' in (runs / "1" / f"pass-{n}.log").read_text(), n
    assert len((runs / "1" / "samples.jsonl").read_text().splitlines()) == 24

    (small_disk / "filler").unlink()
    status = subprocess.run([*OPTSEQ, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    assert "finished from its passes' logs" in status.stderr, status.stderr
    assert {v["id"]: v["state"] for v in json.loads(status.stdout)["levers"]} == {"lever": "adopted"}
    (record,) = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                          timeout=300).stdout)["runs"]
    assert (record["status"], record["verdict"], record["passes"], record["n_samples"]) == ("succeeded", "adopt", 6, 24)
    assert record["summary"]["stats"]["launches"] == 6 and "finished from its passes' logs" in record["note"]


def test_a_disk_that_fills_under_the_runs_own_logs_ends_it_in_one_line_and_interrupted_once_there_is_room(
        tmp_path, small_disk):
    db = small_disk / "state"  # the whole store on the small disk: the third pass's log cannot be written
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(bench_plan(tmp_path)), "FILL_ME": str(small_disk)}
    Store.open(db, mode="write").close()
    run = subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("optseq:")]
    assert len(errors) == 1, errors
    assert errors[0].startswith("optseq: run 1 lever: cannot write ") and str(db / "runs" / "1") in errors[0], errors
    assert "No space left on device" in errors[0]

    (small_disk / "filler").unlink()
    status = subprocess.run([*OPTSEQ, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert {v["id"]: v["state"] for v in json.loads(status.stdout)["levers"]} == {"lever": "ready"}
    (record,) = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                          timeout=300).stdout)["runs"]
    assert record["status"] == "interrupted"  # its third pass is lost: nothing to decide from, nothing left running
    for n in (1, 2):
        assert '"event": "done"' in (db / "runs" / "1" / f"pass-{n}.log").read_text(), n
