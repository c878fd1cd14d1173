"""Records of the wrong shape, with right checksums, in every table of the hot file and every journal: each command
that reads the store refuses in the same one line naming the file, the record and the field, exit 2, no traceback,
and changes no byte (issue 33, point 1). A store of real shape is built through the real API, then edited as a
hand, an older or newer optseq, or a bug would: the JSON parses, a journal's checksum in the hot file is made right
again, only the shape is wrong."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from optseq.console.cli import main
from optseq.state.store.storage import dump
from tests.conftest import DEFAULT_PLAN, OPTSEQ

READS = (("status",), ("runs",), ("export",), ("whatif",), ("status", "--json"))
"""The commands that read the store; `validate` reads the plan alone, `doctor` says file by file."""
DELETE = object()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A store with records in every table: runs, automatic decisions and their events (the store bench's builder,
    the real API), a criterion, a fact, and a run in flight held by this (live) process."""
    from optseq.state.bench.store_build import build_store
    from optseq.state.sequencer import Sequencer

    db = tmp_path_factory.mktemp("shapes") / "state"
    build_store(DEFAULT_PLAN, db, 6)
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.set_fact("eval_dense", True)
        with seq.writer.writing():
            seq.writer.append("runs", {"lever": "option_a", "status": "running", "argv": ["true"], "pid": os.getpid(),
                                "passes": 0, "runner": "local"})
    data = hot(db)
    assert all(data[t] for t in ("meta", "levers", "active", "snapshot", "recent")), sorted(data)
    assert all((db / "journal" / f"{t}.jsonl").stat().st_size for t in ("runs", "decisions", "criteria", "facts",
                                                                          "events"))
    return db


def hot(db: Path) -> dict:
    return json.loads((db / "optseq.json").read_bytes())


def files(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [db / "optseq.json", *sorted((db / "journal").glob("*"))]}


def put(doc, path: str, value) -> None:
    """Set (or delete) the field at a dotted path (`[i]` for a list's item)."""
    keys = [int(k[1:-1]) if k.startswith("[") else k for k in path.replace("[", ".[").split(".") if k]
    for k in keys[:-1]:
        doc = doc[k]
    if value is DELETE:
        del doc[keys[-1]]
    else:
        doc[keys[-1]] = value


def edit_hot(db: Path, table: str, doc_id: str, path: str, value) -> None:
    data = hot(db)
    doc_id = doc_id if doc_id != "first" else sorted(data[table], key=int)[0]
    put(data[table][doc_id], path.replace("{first_key}", next(iter(data[table][doc_id].get("keys") or {"": 0}))),
        value)
    (db / "optseq.json").write_bytes(dump(data).encode("utf-8"))


def edit_journal(db: Path, table: str, rid: int, path: str, value) -> None:
    """The insert line of record `rid`, edited in place to the same length (spaces pad it: JSON allows them, and
    every offset the hot file keeps stays right), and the journal's checksum in the hot file made right."""
    journal = db / "journal" / f"{table}.jsonl"
    raw = journal.read_bytes()
    at = 0
    for text in raw.split(b"\n"):
        line = json.loads(text)
        if line["op"] == "i" and line["id"] == rid:
            break
        at += len(text) + 1
    else:
        raise AssertionError(f"no insert of record {rid} in {journal}")
    if path == "":
        line = value
    else:
        put(line, path, value)
    new = dump(line).encode("utf-8")
    assert len(new) <= len(text), (table, path, "the edit must not make the line longer")
    new = new[:-1] + b" " * (len(text) - len(new)) + b"}"
    edited = raw[:at] + new + raw[at + len(text):]
    journal.write_bytes(edited)
    data = hot(db)
    meta = data["meta"]["1"]
    assert meta["ends"][table] == len(edited)
    meta["sums"][table] = zlib.crc32(edited)  # a right checksum: only the shape is wrong
    (db / "optseq.json").write_bytes(dump(data).encode("utf-8"))


HOT_CASES = {
    # the issue's cases
    "snapshot-ends-true": ("snapshot", "1", "ends", True, "`ends`"),
    "snapshot-lever-decision--1": ("snapshot", "1", "data.levers.julia_port.decision", -1,
                                   "`data.levers.julia_port.decision`"),
    # a wrong type, a wrong enum, a missing field, a null, a nested wrong type, per table
    "snapshot-seq-null": ("snapshot", "1", "seq", None, "`seq`"),
    "snapshot-running-id-text": ("snapshot", "1", "data.runs.running", {"option_a": "seven"},
                                 "`data.runs.running.option_a`"),
    "snapshot-lever-state-enum": ("snapshot", "1", "data.levers.julia_port.state", "flying",
                                  "`data.levers.julia_port.state`"),
    "snapshot-results-nested": ("snapshot", "1", "data.levers.julia_port.results", [["torch_jl", "c4", "maybe", ""]],
                                "`data.levers.julia_port.results[0][2]`"),
    # issue 38: a lever's `unavailable` that is no {reason, run} was a KeyError from status and export
    "snapshot-lever-unavailable-shape": ("snapshot", "1", "data.levers.julia_port.unavailable", {"a": 1},
                                         "`data.levers.julia_port.unavailable.reason`: missing"),
    "levers-state-enum": ("levers", "first", "state", "flying",
                          "`state`: invalid enum value 'flying' (one of unplanned, "),
    "levers-why-blocked-text": ("levers", "first", "why_blocked", "not a list", "`why_blocked`"),
    "levers-lever-missing": ("levers", "first", "lever", DELETE, "`lever`"),
    "active-run-null": ("active", "first", "run", None, "`run`"),
    "active-pid-text": ("active", "first", "pid", "1234", "`pid`"),
    # the fields an in-flight row and the meta keep that recovery reads as types (state/store/rows.py)
    "active-from-journal-text": ("active", "first", "from_journal", "yes", "`from_journal`"),
    "active-elsewhere-int": ("active", "first", "elsewhere", 5, "`elsewhere`"),
    "meta-inflight-checked-int": ("meta", "1", "inflight_checked", 7, "`inflight_checked`"),
    "recent-copy-nested": ("recent", "first", "keys.{first_key}.last[0].lever", 5, ".last[0].lever`"),
    "recent-n-text": ("recent", "first", "keys.{first_key}.n", "3", ".n`"),
    "meta-heads-nested": ("meta", "1", "heads.runs", {"option_b": "far"}, "`heads.runs.option_b`"),
}


JOURNAL_CASES = {
    # the issue's case: a criteria line that is an insert and nothing more
    "criteria-insert-only": ("criteria", 1, "r", {}, "`r.lever`"),
    "criteria-outcome-enum": ("criteria", 1, "r.outcome", "meh", "`r.outcome`"),
    "criteria-lever-null": ("criteria", 1, "r.lever", None, "`r.lever`"),
    "runs-status-int": ("runs", 1, "r.status", 7, "`r.status`"),
    "runs-status-enum": ("runs", 1, "r.status", "flying", "`r.status`: invalid enum value 'flying' (one of running, "),
    "runs-argv-text": ("runs", 1, "r.argv", "x", "`r.argv`"),
    "runs-lever-missing": ("runs", 1, "r.lever", DELETE, "`r.lever`"),
    "decisions-stats-nested": ("decisions", 2, "r.stats.estimate", "x", "`r.stats.estimate`"),
    "decisions-runs-text": ("decisions", 2, "r.runs", "1", "`r.runs`"),
    "decisions-outcome-missing": ("decisions", 1, "r.outcome", DELETE, "`r.outcome`"),
    "events-type-missing": ("events", 1, "r.type", DELETE, "`r.type`"),
    "events-lever-int": ("events", 1, "r.lever", 5, "`r.lever`"),
    "facts-value-text": ("facts", 1, "r.value", "no", "`r.value`"),
    "facts-seq-missing": ("facts", 1, "seq", DELETE, "`seq`"),
}


def cli_in_process(db: Path, *args: str) -> tuple[int, str, str]:
    """`optseq ARGS --plan … --db …` through the CLI's own main, in this process (its streams captured): a
    traceback is an exception that reaches the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--plan", str(DEFAULT_PLAN), "--db", str(db)] if args[0] != "doctor"
                    else [*args, "--db", str(db)])
    return code, out.getvalue(), err.getvalue()


def refused_alike(db: Path, where: Path, field: str) -> str:
    """Every reading command refuses in one and the same line naming `where` and `field`; doctor names them too;
    not a byte of the store changes."""
    before = files(db)
    lines = set()
    for args in READS:
        code, out, err = cli_in_process(db, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, code, err, out[-500:])
        assert "Traceback" not in err and str(where) in err and field in err and "wrong shape" in err, (args, err)
        lines.add(err)
    assert len(lines) == 1, lines  # the same line from every command
    code, out, _ = cli_in_process(db, "doctor")
    assert code == 2 and any(str(where) in line and field in line for line in out.splitlines()), out
    assert files(db) == before
    return lines.pop()


def test_the_intact_store_is_read_by_every_command(pristine, tmp_path):
    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    for args in READS:
        code, _, err = cli_in_process(db, *args)
        assert code == 0, (args, err)
    assert cli_in_process(db, "doctor")[0] == 0


@pytest.mark.parametrize("case", sorted(HOT_CASES))
def test_a_hot_record_of_the_wrong_shape_is_one_line_from_every_command(pristine, tmp_path, case):
    table, doc_id, path, value, field = HOT_CASES[case]
    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    edit_hot(db, table, doc_id, path, value)
    line = refused_alike(db, db / "optseq.json", field)
    assert f" of {table}, field " in line and "optseq doctor --rebuild" in line, line


@pytest.mark.parametrize("case", sorted(JOURNAL_CASES))
def test_a_journal_record_of_the_wrong_shape_is_one_line_from_every_command(pristine, tmp_path, case):
    table, rid, path, value, field = JOURNAL_CASES[case]
    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    edit_journal(db, table, rid, path, value)
    line = refused_alike(db, db / "journal" / f"{table}.jsonl", field)
    assert f"record {rid} of {table}, field " in line and "at byte" in line, line


def test_a_hot_file_of_the_wrong_shape_is_rebuilt_from_the_journals(pristine, tmp_path):
    """The journals are the history: `doctor --rebuild` makes a hot file every command reads again."""
    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    edit_hot(db, "snapshot", "1", "ends", True)
    journals = {k: v for k, v in files(db).items() if k != "optseq.json"}
    code, out, err = cli_in_process(db, "doctor", "--rebuild")
    assert code == 0, (out, err)
    assert {k: v for k, v in files(db).items() if k != "optseq.json"} == journals
    for args in READS:
        assert cli_in_process(db, *args)[0] == 0, args


@pytest.mark.parametrize("case", ["snapshot-ends-true", "snapshot-lever-decision--1", "criteria-insert-only"])
def test_the_issues_cases_through_the_real_cli(pristine, tmp_path, case):
    """The three cases the issue saw crash, through the installed CLI's entry in fresh processes."""
    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    if case in HOT_CASES:
        table, doc_id, path, value, field = HOT_CASES[case]
        edit_hot(db, table, doc_id, path, value)
        where = db / "optseq.json"
    else:
        table, rid, path, value, field = JOURNAL_CASES[case]
        edit_journal(db, table, rid, path, value)
        where = db / "journal" / f"{table}.jsonl"
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    before, lines = files(db), set()
    for args in (("status",), ("runs",), ("export",), ("whatif",)):
        proc = subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, timeout=300)
        err = proc.stderr
        assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert str(where) in err and field in err, (args, err)
        lines.add(err)
    assert len(lines) == 1 and files(db) == before, lines
    # validate reads the plan alone: a store of any shape is none of its business
    proc = subprocess.run([*OPTSEQ, "validate"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_record_of_the_wrong_shape_is_refused_before_it_is_written(pristine, tmp_path):
    """No writer's bug makes a store every reader refuses: the write is refused, nothing is written."""
    from optseq.state.store.store import Store

    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    before = files(db)
    with Store.open(db) as store:
        for table, record in (("runs", {"lever": "amp", "status": "flying"}), ("criteria", {"lever": "x"}),
                              ("decisions", {"lever": "amp", "outcome": "adopt", "runs": ["1"]}),
                              ("levers", {"lever": "amp", "state": "flying"})):
            with pytest.raises(ValueError, match=f"a record for '{table}' has the wrong shape: field `"):
                store.append(table, record)
        # what a run's summary gives its readers as types (record_types.Summary, Stats) is checked here, once
        for summary, field in (({"stats": {"noise": 5}}, "summary.stats.noise"), ({"error": ["x"]}, "summary.error"),
                               ({"stats": {"launches": "3"}}, "summary.stats.launches")):
            with pytest.raises(ValueError, match=f"a record for 'runs' has the wrong shape: field `{field}`"):
                store.append("runs", {"lever": "amp", "status": "succeeded", "summary": summary})
        with pytest.raises(ValueError, match="field `status`"):
            store.update("runs", 1, {"status": 3})
    assert files(db) == before


def test_the_schema_knows_the_machines_states_and_snapshot_layout():
    """The store's shapes and the lever machine take their words from one place (state/kinds.py)."""
    from optseq.state.kinds import ENDED, IN_FLIGHT, LeverState, RunStatus
    from optseq.state.lifecycle import snapshot, states
    from optseq.state.store import shapes

    assert states.STATES == [s.value for s in LeverState] and shapes.SNAPSHOT_VERSION == snapshot.VERSION
    assert set(RunStatus) == {*IN_FLIGHT, *ENDED} and not set(IN_FLIGHT) & set(ENDED)


def test_the_console_opening_the_store_refuses_in_the_same_line(pristine, tmp_path):
    """The console opens the plan and the store before any screen is drawn: the same refusal, said by the CLI."""
    from optseq.console.tui.app import make_app
    from optseq.state.store.shape_check import RecordShapeError

    db = tmp_path / "state"
    shutil.copytree(pristine, db)
    edit_journal(db, "criteria", 1, "r", {})
    _, _, line = cli_in_process(db, "status")
    with pytest.raises(RecordShapeError) as refused:
        make_app(DEFAULT_PLAN, db)
    assert line == f"optseq: {refused.value}\n"
