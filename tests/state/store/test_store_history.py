"""History that does not grow the cost of a command with it: `runs --json` written record by record as the journal
is read (the same document as before), the late lines' index it relies on, the stamps that spare an open reading
every journal, and the digest the export reads instead of the journals. Real stores, the real CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.bench import store_build
from optseq.state.report import markdown
from optseq.state.sequencer import Sequencer
from optseq.state.store import digest, integrity
from optseq.state.store.layout import HISTORY
from optseq.state.store.settled import settled
from optseq.state.store.store import Store, StoreCorrupt
from tests.conftest import DEFAULT_PLAN, OPTSEQ

# on one parallel worker (make test runs pytest -n): its history store is built once
pytestmark = pytest.mark.xdist_group("store_history")

RUNS = 45
"""Enough runs that each lever has more decisions than the digest keeps (digest.KEEP)."""


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("history") / "state"
    store_build.build_store(DEFAULT_PLAN, db, RUNS, group=7)
    return db


def tangled(directory: Path) -> None:
    """Every kind of line the settle rule must get right: a run still in flight ahead of finished ones, runs
    inserted finished, runs changed after they finished (notes, a recovery's word), an update of an id never
    handed out is refused before it is written, replaces (upsert) of facts, many decisions and events."""
    with Store.open(directory) as s:
        early = s.append("runs", {"lever": "a", "status": "running", "pid": 1})  # in flight throughout
        done = []
        for i in range(6):
            run = s.append("runs", {"lever": "b" if i % 2 else "c", "status": "running", "pid": 1})
            s.update("runs", run["id"], {"passes": 1})
            s.update("runs", run["id"], {"status": "succeeded", "verdict": "adopt"})
            done.append(run)
        s.append("runs", {"lever": "b", "status": "failed", "reason": "inserted finished"})
        with s.batch():
            s.update("runs", done[0]["id"], {"notes": ["criterion event not recorded: late"]})  # late
            s.append("runs", {"lever": "c", "status": "running", "pid": 1})
        s.update("runs", done[3]["id"], {"note": "finished from its passes' logs"})  # late, much later
        s.update("runs", early["id"], {"passes": 2})  # in flight: not late
        for i in range(30):
            s.upsert("facts", "name", {"name": f"f{i % 4}", "value": i % 2 == 0})
            s.append("decisions", {"lever": "b", "outcome": "adopt" if i % 2 else "reject", "why": str(i)})
            s.append("events", {"type": "stale", "lever": "c", "reason": str(i)})


def test_streamed_records_are_the_records_read_whole_in_every_table(tmp_path):
    tangled(tmp_path / "state")
    with Store.open(tmp_path / "state", mode="read") as s:
        late = s.meta().late or {}
        assert sorted(map(int, late["runs"])) == sorted([2, 5])  # the two changes after a run finished
        assert len(late["facts"]) == 4  # each fact replaced
        for table in HISTORY:
            assert list(s.stream(table)) == s.all(table), table


def test_a_run_is_given_out_once_settled_not_after_the_whole_journal(tmp_path):
    directory = tmp_path / "state"
    with Store.open(directory) as s:
        for i in range(200):
            run = s.append("runs", {"lever": "b", "status": "running", "pid": 1})
            s.update("runs", run["id"], {"status": "succeeded", "n": i})
    with Store.open(directory, mode="read") as s:
        journal, end = s.journals["runs"], s.ends()["runs"]
        read: list[int] = []
        lines = journal.iter_lines

        def counted(start, stop, chunk=integrity.CHUNK):
            for at, line in lines(start, stop, chunk=512):  # small chunks, so the count says how far it read
                read.append(at)
                yield at, line

        journal.iter_lines = counted
        records = settled(journal, end, (s.meta().late or {})["runs"])
        first = next(records)
        assert first["id"] == 1 and first["status"] == "succeeded" and first["n"] == 0
        assert len(read) <= 3 + 512 // 40  # its two lines, and what one small chunk held beyond them
        assert [first, *records] == s.all("runs")


def test_runs_json_is_the_document_it_printed_when_it_read_everything_first(built):
    env = {**os.environ, "OPTSEQ_DB": str(built), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    with Sequencer.open(DEFAULT_PLAN, built, mode="read") as seq:
        whole = seq.views.history()
        option_b = seq.views.history("option_b")
    out = cli(env, "runs", "--json")
    assert out.returncode == 0, out.stderr
    # the history, then the levers' change points (tests/console/test_change_points_views.py checks them)
    whole["changes"] = json.loads(out.stdout)["changes"]
    assert out.stdout == json.dumps(whole, ensure_ascii=False, indent=2) + "\n"
    assert json.loads(out.stdout) == whole and len(whole["runs"]) == RUNS
    one = cli(env, "runs", "option_b", "--json")
    option_b["changes"] = json.loads(one.stdout)["changes"]
    assert one.returncode == 0 and one.stdout == json.dumps(option_b, ensure_ascii=False, indent=2) + "\n"
    assert {r["lever"] for r in json.loads(one.stdout)["runs"]} == {"option_b"}
    assert [r["id"] for r in json.loads(one.stdout)["runs"]] == [r["id"] for r in whole["runs"]
                                                                  if r["lever"] == "option_b"]


def late_index_damaged(directory: Path, change) -> None:
    hot = directory / "optseq.json"
    data = json.loads(hot.read_text(encoding="utf-8"))
    change(data["meta"]["1"]["late"]["runs"])
    hot.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("change, words", [
    (lambda late: late.update({"2": [late["2"][0] + 3]}), "record 2 at byte"),
    (lambda late: late.pop("5"), "changes record 5 at byte"),
], ids=["offset-moved", "entry-lost"])
def test_a_damaged_late_index_is_refused_in_one_line(tmp_path, change, words):
    directory = tmp_path / "state"
    tangled(directory)
    late_index_damaged(directory, change)
    env = {**os.environ, "OPTSEQ_DB": str(directory), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    proc = cli(env, "runs", "--json")
    err = proc.stderr.strip()
    # the stand-in levers and facts are not the plan's: the replay warns of each, then the refusal, in one line
    refusals = [line for line in err.splitlines() if not line.startswith("optseq: warning:")]
    assert proc.returncode == 2 and len(refusals) == 1 and "Traceback" not in err, err
    assert words in refusals[0] and "runs.jsonl" in refusals[0], err


FULL_DISK = """
import resource, signal, sys
from optseq.state.store.store import Store, StoreUnwritable
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
s = Store.open(sys.argv[1])
s.append("levers", {"lever": "amp", "state": "ready", "pad": "y" * 4000})  # a hot file larger than the journal line
journal = (s.directory / "journal" / "runs.jsonl").stat().st_size
# room for the late line in the journal, none for the hot file's replace: the commit fails half way
resource.setrlimit(resource.RLIMIT_FSIZE, (journal + 300, resource.RLIM_INFINITY))
try:
    s.update("runs", int(sys.argv[2]), {"note": "never committed"})
except StoreUnwritable as exc:
    print("refused")
"""


def test_a_late_line_whose_commit_failed_is_in_no_index(tmp_path):
    directory = tmp_path / "state"
    tangled(directory)
    with Store.open(directory, mode="read") as s:
        late = s.meta().late or {}
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(directory), "3"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout == "refused\n", proc.stderr
    with Store.open(directory) as s:  # the next writer cuts the line off (keeping a copy); no index names it
        s.append("events", {"type": "stale", "lever": "c", "reason": "after"})
        assert (s.meta().late or {})["runs"] == late["runs"]
        assert list((directory / "journal").glob("runs.jsonl.cut-*"))
        for table in HISTORY:
            assert list(s.stream(table)) == s.all(table), table
        assert "note" not in s.get("runs", 3)


def big_events(directory: Path) -> Path:
    """A store whose events journal is past integrity.SETTLE_BYTES, so its writer waits to stamp it trusted."""
    with Store.open(directory) as s, s.batch():
        for i in range(integrity.SETTLE_BYTES // 16_000 + 1):
            s.append("events", {"type": "stale", "lever": "c", "reason": "x" * 16_000, "i": i})
    return directory / "journal" / "events.jsonl"


def test_an_open_reads_no_journal_its_stamp_vouches_for(tmp_path, monkeypatch):
    path = big_events(tmp_path / "state")
    read: list[Path] = []
    crc = integrity.crc_of
    monkeypatch.setattr(integrity, "crc_of", lambda p, *a, **k: read.append(p) or crc(p, *a, **k))
    with Store.open(tmp_path / "state", mode="read") as s:
        assert integrity.stamped(path, (s.meta().stamps or {})["events"])
    assert path not in read


def test_a_same_size_change_is_refused_even_with_its_mtime_put_back(tmp_path):
    path = big_events(tmp_path / "state")
    st = path.stat()
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"i":7}', b'"i":8}', 1))  # same size, still JSON: only the sum can tell
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # a tool that keeps the mtime: the ctime still moves
    with pytest.raises(StoreCorrupt, match="does not match the checksum"):
        Store.open(tmp_path / "state", mode="read")


def test_a_stamp_taken_inside_the_racy_window_is_not_trusted(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b"{}\n")
    stat = integrity.stat_of(path)
    assert integrity.stamped(path, [*stat, stat[2] + integrity.RACY_NS])
    assert not integrity.stamped(path, [*stat, stat[2] + integrity.RACY_NS - 1])
    assert not integrity.stamped(path, [stat[0], stat[1] + 1, *stat[2:], stat[2] + integrity.RACY_NS])


def full_export(seq) -> str:
    records = {t: seq.store.all(t) for t in digest.TABLES}
    return markdown.render(seq.plan, seq.machine, {**records, "runs": seq.views.latest_runs()}, today="2026-12-01")


def test_the_export_from_the_digest_is_the_export_from_every_record(built, tmp_path):
    db = tmp_path / "state"
    store_build.build_store(DEFAULT_PLAN, db, RUNS, group=7)
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        for i in range(digest.KEEP + 3):  # a lever whose standing decision is older than its newest ones
            seq.actions.decide("amp", "defer", f"defer {i}")
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        records = seq.views.export_records()
        assert {h["lever"] for h in records["decisions_hidden"]} >= set(store_build.LEVERS)
        assert len(records["decisions"]) < len(seq.store.all("decisions"))
        assert markdown.render(seq.plan, seq.machine, records, today="2026-12-01") == full_export(seq)
        for table in digest.TABLES:
            assert seq.store.recent(table) in (None, digest.started(seq.store.all(table))), table


def test_a_store_from_before_the_digest_gains_it_on_its_first_write(tmp_path):
    db = tmp_path / "state"
    store_build.build_store(DEFAULT_PLAN, db, RUNS, group=7)
    hot = db / "optseq.json"
    data = json.loads(hot.read_text(encoding="utf-8"))
    kept = data.pop("recent")
    hot.write_text(json.dumps(data), encoding="utf-8")
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        assert seq.store.recent("decisions") is None
        before = seq.views.export()  # read whole, as before the digest
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.decide("amp", "defer", "a first write")
        groups = seq.store.recent("decisions")
        assert groups == digest.started(seq.store.all("decisions"))
        assert {k: v for k, v in groups.items() if not k.startswith("amp|")} == \
            {k: v for k, v in next(d["keys"] for d in kept.values() if d["table"] == "decisions").items()}
        assert seq.views.export() != before and full_export(seq) == markdown.render(
            seq.plan, seq.machine, seq.views.export_records(), today="2026-12-01")


def test_one_levers_history_is_read_by_its_chain_alone(built):
    with Sequencer.open(DEFAULT_PLAN, built, mode="read") as seq:
        journal = seq.store.journals["runs"]
        read: list[int] = []
        line_at = journal.line_at
        journal.line_at = lambda at, *a, **k: read.append(at) or line_at(at, *a, **k)
        mine = seq.store.lever_records("runs", "option_b")
        journal.line_at = line_at
        whole = [line for _, line in journal.iter_lines(0, seq.store.ends()["runs"])]
        ids = {r["id"] for r in mine}
        assert mine == seq.store.find("runs", lever="option_b") and mine
        assert len(read) == len(set(read)) == sum(1 for line in whole if line["id"] in ids) < len(whole)
        for lever in [lever.id for lever in seq.plan.levers]:
            assert {k: list(v) for k, v in seq.views.history_stream(lever)} == seq.views.history(lever), lever


@pytest.mark.parametrize("table", ["runs", "decisions"])
def test_a_chain_head_moved_to_another_levers_line_is_refused(built, tmp_path, table):
    import shutil

    db = tmp_path / "state"
    shutil.copytree(built, db)
    hot = db / "optseq.json"
    data = json.loads(hot.read_text(encoding="utf-8"))
    heads = data["meta"]["1"]["heads"][table]
    heads["option_b"] = heads["cython_bot"]
    hot.write_text(json.dumps(data), encoding="utf-8")
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    proc = cli(env, "runs", "option_b", "--json")
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{table}.jsonl: the chain of lever 'option_b' leads to byte" in err, err
    assert cli(env, "runs", "cython_bot", "--json").returncode == 0  # the other levers' chains are sound


def test_indexes_an_older_writer_left_behind_are_not_used(built, tmp_path):
    """An older optseq commits lines without keeping the indexes: the end it moves past `meta.indexed` tells."""
    import shutil

    db = tmp_path / "state"
    shutil.copytree(built, db)
    hot = db / "optseq.json"
    data = json.loads(hot.read_text(encoding="utf-8"))
    for table in ("runs", "decisions"):
        data["meta"]["1"]["indexed"][table] -= 1  # as if lines came after what the indexes reach
    hot.write_text(json.dumps(data), encoding="utf-8")
    with Sequencer.open(DEFAULT_PLAN, db, mode="read") as seq:
        assert seq.store.lever_records("runs", "option_b") is None and seq.store.recent("decisions") is None
        assert seq.store.lever_records("events", "option_b") is not None  # the other journals' stand
        assert list(seq.store.stream("runs")) == seq.store.all("runs")
        assert {k: list(v) for k, v in seq.views.history_stream("option_b")} == seq.views.history("option_b")
        assert seq.views.export_records()["decisions"] == seq.store.all("decisions")  # read whole
    with Sequencer.open(DEFAULT_PLAN, db, mode="write") as seq:
        seq.actions.decide("amp", "defer", "the next writer")
        meta = seq.store.meta()
        assert "runs" not in meta.heads and "runs" not in (meta.late or {})  # untracked from now on
        assert meta.indexed == meta.ends
        assert seq.store.recent("decisions") == digest.started(seq.store.all("decisions"))  # the digest, rebuilt
