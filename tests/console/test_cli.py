"""The real `optseq` CLI in subprocesses: the issue's scenarios, exit codes and import hygiene."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import OPTSEQ


def optseq(cli_env, *args, check_code=None):
    proc = subprocess.run([*OPTSEQ, *args], env=cli_env, capture_output=True, text=True, timeout=60)
    if check_code is not None:
        assert proc.returncode == check_code, (proc.stdout, proc.stderr)
    return proc


def status(cli_env) -> dict:
    return json.loads(optseq(cli_env, "status", "--json", check_code=0).stdout)


def lever(st: dict, lever_id: str) -> dict:
    return next(l for l in st["levers"] if l["id"] == lever_id)


def test_status_json_has_the_contract_fields(cli_env):
    st = status(cli_env)
    assert st["next"] is None  # julia_port is ready, but only its criteria can move it
    assert st["todo"] == ["julia_port: record criteria (torch_jl c4 pending)"]
    for entry in st["levers"]:
        assert {"id", "state", "outcome", "stale", "why_blocked"} <= set(entry)
    assert [l["id"] for l in st["levers"]] == ["julia_port", "port", "cython_bot", "option_b", "model_size",
                                               "amp", "compile", "tensorrt", "option_a"]


def test_c4_fail_goes_no_go_and_opens_the_python_track(cli_env):
    out = optseq(cli_env, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "0.8x", check_code=0)
    assert "NO-GO" in out.stdout
    st = status(cli_env)
    assert lever(st, "julia_port")["outcome"] == "NO-GO"
    assert lever(st, "port")["state"] == "closed"
    ob = lever(st, "option_b")
    assert ob["state"] == "unplanned" and ob["why_blocked"] == ["plan not written (optseq plan option_b PATH)"]
    assert next(p for p in st["decision_points"] if p["id"] == "torch_jl_result")["fired"]
    optseq(cli_env, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok", check_code=0)
    st = status(cli_env)
    assert lever(st, "option_b")["state"] == "ready" and st["next"] == "option_b"


def test_c4_pass_goes_go_and_keeps_option_b_blocked(cli_env):
    optseq(cli_env, "record", "julia_port", "torch_jl", "c4", "pass", check_code=0)
    st = status(cli_env)
    assert lever(st, "julia_port")["outcome"] == "GO"
    assert lever(st, "port")["state"] != "blocked"
    assert lever(st, "option_b")["state"] == "blocked"


@pytest.mark.parametrize("args, fragment", [
    (("record", "julia_port", "torch_jl", "c9", "fail"), "unknown criterion 'c9'"),
    (("record", "julia_port", "torch_jl", "c4", "maybe"), "invalid choice: 'maybe'"),
    (("decide", "amp", "adopt"), "needs a rationale"),
    (("decide", "amp", "GO", "--why", "x"), "unknown outcome 'GO'"),
    (("fact", "dense", "true"), "unknown fact 'dense'"),
    (("plan", "nope", "x.md"), "unknown lever 'nope'"),
    (("runs", "nope"), "unknown lever 'nope'"),
    (("--plan", "/nonexistent/plan.toml", "status"), "no such plan file"),
    (("frobnicate",), "invalid choice"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli_env, db, args, fragment):
    optseq(cli_env, "fact", "eval_dense", "false", check_code=0)
    before = (db / "optseq.json").read_bytes()
    proc = optseq(cli_env, *args, check_code=2)
    assert fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert (db / "optseq.json").read_bytes() == before


def test_a_write_beside_an_open_writer_goes_through(cli_env, db, plan_path):
    from optseq.state.sequencer import Sequencer

    with Sequencer.open(plan_path, db, mode="write") as console:
        optseq(cli_env, "fact", "eval_dense", "true", check_code=0)
        assert console.follower.reload() and console.views.status().facts["eval_dense"] is True
        assert status(cli_env)["readonly"] is False


def test_a_write_meeting_a_held_lock_waits_then_names_the_holder(cli_env, db):
    from tests.state.store.test_store import spawn_holder

    holder = spawn_holder(db)
    try:
        proc = optseq(dict(cli_env, OPTSEQ_LOCK_WAIT_S="0.6"), "fact", "eval_dense", "true", check_code=2)
    finally:
        holder.kill()
        holder.wait()
    waiting, refused = proc.stderr.strip().splitlines()
    assert waiting.startswith(f"optseq: waiting for optseq pid {holder.pid} (started ")
    assert refused.startswith(f"optseq: store {db} is busy: optseq pid {holder.pid}") and "Traceback" not in proc.stderr
    optseq(cli_env, "fact", "eval_dense", "true", check_code=0)  # the holder is gone: the write goes through


def test_export_writes_a_file(cli_env, tmp_path):
    out = tmp_path / "docs" / "seq.md"
    out.parent.mkdir()  # export writes into a directory that exists; it creates none (test_export_target)
    optseq(cli_env, "export", "-o", str(out), check_code=0)
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Optimization Sequencing")


def test_validate_default_plan(cli_env, plan_path):
    proc = optseq(cli_env, "validate", str(plan_path), check_code=0)
    assert "9 levers" in proc.stdout


def test_cli_and_state_never_import_torch_or_textual(cli_env):
    code = (
        "import sys, pkgutil, importlib, optseq.state as state\n"
        "for m in pkgutil.walk_packages(state.__path__, 'optseq.state.'): importlib.import_module(m.name)\n"
        "from optseq.console.cli import main\n"
        "for args in (['status', '--json'], ['runs'], ['export'], ['validate']):\n"
        "    main(args)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'textual') or m.startswith('optseq.engine'))\n"
        "sys.stderr.write('LOADED:' + ','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("LOADED:"), proc.stderr[-500:]


def test_outcomes_are_taken_in_any_case(cli_env):
    def cli(*args):
        return subprocess.run([*OPTSEQ, *args], env=cli_env, capture_output=True, text=True, timeout=120)

    assert cli("record", "julia_port", "torch_jl", "c4", "FAIL", "--evidence", "0.8x").returncode == 0
    status = json.loads(cli("status", "--json").stdout)
    assert {v["id"]: v["outcome"] for v in status["levers"]}["julia_port"] == "NO-GO"
    again = cli("decide", "julia_port", "go", "--why", "reversed by hand")
    assert again.returncode == 0 and "julia_port decided GO" in again.stdout, again.stderr
    assert cli("decide", "model_size", "Defer", "--why", "later").returncode == 0
    assert "GO or NO-GO (decision)" in " ".join(cli("decide", "--help").stdout.split())
    runs = json.loads(cli("runs", "--json").stdout)
    assert [d["outcome"] for d in runs["decisions"]] == ["NO-GO", "GO", "defer"]
