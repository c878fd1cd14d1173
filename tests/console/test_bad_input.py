"""Bytes that are not UTF-8 in argv: a one-line error or text stored with U+FFFD, never a traceback.

Python hands undecodable argv bytes over as lone surrogates, which no UTF-8 file can hold; the store
and the lock's holder file are both UTF-8. Every test runs the real CLI with bytes in its argv.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DEFAULT_PLAN, OPTSEQ

BAD = b"\xff"
"""Never valid in UTF-8."""


def optseq(env, *args: str | bytes, cwd=None) -> subprocess.CompletedProcess:
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in (*OPTSEQ, *args)]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=120)


@pytest.fixture
def env(cli_env) -> dict:
    # strict UTF-8 output, as under an en_US.UTF-8 locale: a surrogate printed raw would raise
    return dict(cli_env, PYTHONIOENCODING="utf-8:strict")


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    return proc.stdout.decode("utf-8")  # strictly: what optseq prints is UTF-8


def bad_input(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and proc.stdout == b"", (proc.returncode, err)
    assert "Traceback" not in err and err.startswith("optseq: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def stored_files_are_utf8(db: Path) -> None:
    """Every record file of the store decodes as strict UTF-8 (run logs, the lever's raw bytes, aside)."""
    files = [p for p in db.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert files
    for path in files:
        path.read_bytes().decode("utf-8")


def history(env) -> dict:
    return json.loads(ok(optseq(env, "runs", "--json")))


def test_evidence_with_bad_bytes_is_stored_with_a_replacement_character(env, db):
    out = ok(optseq(env, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", b"0.8x of PyTorch " + BAD))
    assert "recorded julia_port torch_jl c4 fail" in out
    (criterion,) = [c for c in history(env)["criteria"] if c["criterion"] == "c4"]
    assert criterion["evidence"] == "0.8x of PyTorch \ufffd"
    stored_files_are_utf8(db)
    status = json.loads(ok(optseq(env, "status", "--json")))  # the store still opens, reads and writes
    assert next(l for l in status["levers"] if l["id"] == "julia_port")["outcome"] == "NO-GO"


def test_a_truncated_sequence_is_one_replacement_character(env, db):
    # b"\xe2\x82" is the start of a three-byte character, cut short: one U+FFFD, as bytes.decode gives
    ok(optseq(env, "record", "julia_port", "torch_jl", "c1", "pass", "--evidence", b"cut \xe2\x82 short \xc3\xa9"))
    (criterion,) = [c for c in history(env)["criteria"] if c["criterion"] == "c1"]
    assert criterion["evidence"] == "cut \ufffd short é"


def test_a_rationale_and_a_plan_path_with_bad_bytes(env, db):
    ok(optseq(env, "plan", "option_b", b"docs/plans/option_" + BAD + b".md", "--missing-ok"))
    ok(optseq(env, "decide", "cython_bot", "reject", "--why", b"slower on " + BAD + b" hosts"))
    h = history(env)
    assert h["decisions"][-1]["why"] == "slower on \ufffd hosts"
    assert [e["path"] for e in h["events"] if e.get("type") == "plan"] == ["docs/plans/option_\ufffd.md"]
    stored_files_are_utf8(db)
    doc = ok(optseq(env, "export", "--lang", "en"))
    assert "`docs/plans/option_\ufffd.md`" in doc and "slower on \ufffd hosts" in doc


def test_a_lever_id_with_bad_bytes_is_an_unknown_lever(env, db):
    bad_input(optseq(env, "decide", b"amp" + BAD, "adopt", "--why", "x"), "unknown lever 'amp\ufffd'")
    bad_input(optseq(env, "runs", b"jul" + BAD), "unknown lever 'jul\ufffd'")


def test_an_outcome_with_bad_bytes_is_refused_by_the_parser(env, db):
    # argparse quotes the value's repr, which spells the byte as an escape: still one line, exit 2
    bad_input(optseq(env, "record", "julia_port", "torch_jl", "c4", b"pa" + BAD + b"ss"),
              "invalid choice: 'pa\\udcffss'")
    bad_input(optseq(env, "status", b"--js" + BAD), "unrecognized arguments: --js\\udcff")


def test_a_read_command_with_bad_bytes_in_argv_works(env, db, tmp_path):
    # the holder file names the command's argv: a plan file whose name is not UTF-8 must not crash it
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/plan" + BAD + b".toml"))
    shutil.copy(DEFAULT_PLAN, odd)
    out = ok(optseq(env, "status", "--plan", os.fsencode(odd)))
    assert out.startswith(f"plan {tmp_path}/plan\\udcff.toml")  # printed escaped, not raised
    status = json.loads(ok(optseq(env, "status", "--json", "--plan", os.fsencode(odd))))
    assert status["levers"][0]["id"] == "julia_port" and status["plan"] == str(odd)
    ok(optseq(env, "runs", "--plan", os.fsencode(odd)))
    ok(optseq(env, "export", "--plan", os.fsencode(odd)))


def test_a_state_directory_whose_path_is_not_utf8_is_refused(env, tmp_path):
    odd = bytes(tmp_path) + b"/state" + BAD
    for args in (["status"], ["fact", "eval_dense", "true"]):
        bad_input(optseq(env, *args, "--db", odd), "its path is not valid UTF-8",
                  f"state directory {tmp_path}/state\ufffd")
    bad_input(optseq(dict(env, OPTSEQ_DB=os.fsdecode(odd)), "status"), "is not valid UTF-8")
    assert not os.path.exists(odd)  # refused before anything was created
    ok(optseq(env, "validate", "--db", odd))  # a command that opens no store does not care


def test_an_export_file_name_with_bad_bytes_is_written_as_named(env, db, tmp_path):
    target = bytes(tmp_path) + b"/plan" + BAD + b".md"
    out = ok(optseq(env, "export", "-o", target))
    assert out == f"wrote {tmp_path}/plan\\udcff.md\n"
    assert Path(os.fsdecode(target)).read_text(encoding="utf-8").startswith("# Optimization Sequencing")


def test_the_holder_file_is_written_and_read_as_utf8(tmp_path, monkeypatch):
    # the sidecar names the writer by its argv; the one transaction that writes it lasts milliseconds, so
    # its two ends are checked here directly on real files
    import sys

    from optseq.state.store.locks import HOLDER_NAME, _write_holder, read_holder

    monkeypatch.setattr(sys, "argv", ["optseq", "record", os.fsdecode(b"ok" + BAD)])
    _write_holder(tmp_path, {"pid": os.getpid(), "argv": list(sys.argv), "host": socket.gethostname()})
    raw = (tmp_path / HOLDER_NAME).read_bytes().decode("utf-8")
    assert json.loads(raw)["argv"] == ["optseq", "record", "ok\ufffd"]
    # a sidecar spelling a lone surrogate as a JSON escape (another writer's) reads back clean
    (tmp_path / HOLDER_NAME).write_text('{"pid": 1, "argv": ["\\ud800"], "host": "h\\udfff"}', encoding="utf-8")
    assert read_holder(tmp_path) == {"pid": 1, "argv": ["\ufffd"], "host": "h\ufffd"}
    (tmp_path / HOLDER_NAME).write_bytes(b'{"pid": 1, "argv": ["\xff"]}')  # not UTF-8 at all
    assert read_holder(tmp_path) == {"pid": 1, "argv": ["\ufffd"]}
