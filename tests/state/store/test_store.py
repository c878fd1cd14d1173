"""The store over real files: hot state and journals, sequence numbers, transactions, the lock, recovery, refusals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tinydb import TinyDB

from optseq.state.store.layout import TABLES
from optseq.state.store.records import RecordNotFound
from optseq.state.store.rows import Active, Meta
from optseq.state.store.schema import SCHEMA_VERSION, StoreSchemaError
from optseq.state.store.store import (
    Store, StoreCorrupt, StoreError, StoreLocked, StoreReadOnly, StoreUnwritable,
)

HELPER = (Path(__file__).parents[1] / "kill_writer.py")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "state" / "nested"


@pytest.fixture
def store(store_dir: Path):
    with Store.open(store_dir) as s:
        yield s


def spawn_holder(directory: Path) -> subprocess.Popen:
    """A real second process holding the store's lock inside a transaction; returns once it says so."""
    proc = subprocess.Popen([sys.executable, str(HELPER), "hold", str(directory)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("ready"), proc.stderr.read()
    return proc


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def temp_files(directory: Path) -> list[Path]:
    return sorted(directory.glob(".optseq.json.*.tmp"))


SHAPED = {"levers": {"lever": "amp", "state": "ready"}, "runs": {"lever": "amp", "status": "succeeded"},
          "decisions": {"lever": "amp", "outcome": "adopt"}, "events": {"type": "note"},
          "criteria": {"lever": "julia_port", "candidate": "flux", "criterion": "c1", "outcome": "pass"},
          "facts": {"value": True}}
"""The fields each table's records must have (state/store/shapes.py): the least a made-up record carries."""


def test_every_table_round_trips_through_the_file(store_dir):
    written = {}
    with Store.open(store_dir) as s:
        for n, table in enumerate(TABLES):
            rec = s.append(table, {**SHAPED[table], "name": f"{table}-{n}", "nested": {"list": [1, 2.5, None, True]},
                                   "n": n})
            assert rec["id"] == 1 and rec["name"] == f"{table}-{n}"
            written[table] = rec
    for mode in ("write", "read"):
        with Store.open(store_dir, mode=mode) as s:
            for table, rec in written.items():
                assert s.all(table) == [rec]
                assert s.get(table, rec["id"]) == rec
                assert s.find(table, name=rec["name"], n=rec["n"]) == [rec]
                assert s.find(table, name="nobody") == []
                assert s.get(table, 99) is None


def test_the_hot_file_reads_as_json_loads_reads_it_where_msgspec_refuses_it(store_dir):
    # the hot file is parsed by msgspec's decoder, and by json.loads where it refuses: NaN (json.dumps writes it),
    # an integer past 64 bits; what a store wrote reads back whole either way
    with Store.open(store_dir) as s:
        plain = s.append("levers", {**SHAPED["levers"], "n": [1, 2.5, None, True], "text": "설명"})
        odd = s.append("levers", {**SHAPED["levers"], "lever": "compile", "nan": float("nan"), "big": 2 ** 70})
    raw = (store_dir / "optseq.json").read_text(encoding="utf-8")
    assert "NaN" in raw and str(2 ** 70) in raw
    with Store.open(store_dir, mode="read") as s:
        got = {r["id"]: r for r in s.all("levers")}
    assert got[plain["id"]] == plain
    assert json.dumps(got[odd["id"]], sort_keys=True) == json.dumps(odd, sort_keys=True)
    assert isinstance(got[odd["id"]]["big"], int)


def test_seq_is_strictly_increasing_across_tables_in_call_order(store):
    returned = [store.append("levers", {**SHAPED["levers"], "k": 0}), store.append("runs", {**SHAPED["runs"], "k": 1})]
    with store.batch():
        returned += [store.append("events", {"type": "note", "k": 2}),
                     store.append("decisions", {**SHAPED["decisions"], "k": 3})]
    returned.append(store.upsert("facts", "name", {"name": "device", "value": True, "k": 4}))
    returned.append(store.append("criteria", {**SHAPED["criteria"], "k": 5}))
    returned.append(store.upsert("facts", "name", {"name": "device", "value": True, "k": 6}))
    seqs = [r["seq"] for r in returned]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    stored = sorted((r for t in TABLES for r in store.all(t)), key=lambda r: r["seq"])
    assert [r["k"] for r in stored] == [0, 1, 2, 3, 5, 6]  # the replaced fact (k=4) is gone, k=6 is newest
    meta = store.meta()
    assert meta.schema_version == SCHEMA_VERSION == 2 and meta.seq == seqs[-1]
    assert meta.ids == {"runs": 1, "events": 1, "decisions": 1, "facts": 1, "criteria": 1}
    for r in stored:
        assert r["at"].endswith("+00:00") and len(r["at"]) == len("2026-01-01T00:00:00+00:00")


def test_update_keeps_seq_and_upsert_replaces_whole_record(store):
    run = store.append("runs", {"lever": "amp", "status": "running", "pid": 1})
    updated = store.update("runs", run["id"], {"status": "succeeded", "summary": {"speedup": 1.4}})
    assert updated == {"id": run["id"], "status": "succeeded", "summary": {"speedup": 1.4}}
    assert store.get("runs", run["id"]) == {**run, "status": "succeeded", "summary": {"speedup": 1.4}}
    first = store.upsert("facts", "name", {"name": "model", "value": True, "hidden": 512, "old": True})
    second = store.upsert("facts", "name", {"name": "model", "value": False, "hidden": 1024})
    assert second["id"] == first["id"] and second["seq"] > first["seq"]
    assert store.all("facts") == [second] and "old" not in second
    with pytest.raises(RecordNotFound, match="no record 42 in table 'runs'"):
        store.update("runs", 42, {"status": "failed"})


def test_korean_text_round_trips_and_the_files_are_compact_utf8(store_dir):
    title = "줄리아 포팅 결정 (Flux vs Torch.jl) — 인프라 먼저"
    with Store.open(store_dir) as s:
        s.append("levers", {**SHAPED["levers"], "title": title, "tags": ["모델 크기", "AMP"]})
        s.append("decisions", {**SHAPED["decisions"], "why": title})
    for raw in ((store_dir / "optseq.json").read_bytes(), (store_dir / "journal" / "decisions.jsonl").read_bytes()):
        assert title.encode("utf-8") in raw  # ensure_ascii=False: stored as text, not \uXXXX escapes
        assert b'", "' not in raw and b'": ' not in raw
    with Store.open(store_dir, mode="read") as s:
        assert s.all("levers")[0]["title"] == title
        assert s.all("levers")[0]["tags"] == ["모델 크기", "AMP"]


def test_plain_tinydb_reads_the_store_file(store):
    store.append("levers", {**SHAPED["levers"], "name": "amp"})
    db = TinyDB(str(store.path), access_mode="r")
    assert [dict(d) for d in db.table("levers").all()] == [{k: v for k, v in store.all("levers")[0].items() if k != "id"}]
    db.close()


def test_each_call_outside_a_batch_is_one_atomic_replace(store):
    inode = store.path.stat().st_ino
    writes = store.storage.writes
    rec = store.append("events", {"type": "note", "e": 1})
    store.update("events", rec["id"], {"e": 2})
    store.upsert("facts", "name", {"name": "x", "value": True})
    assert store.storage.writes == writes + 3
    assert store.path.stat().st_ino != inode  # replaced, not rewritten in place


def test_a_batch_is_one_write_and_readable_before_it_lands(store):
    before = store.path.read_bytes()
    writes = store.storage.writes
    with store.batch():
        for i in range(5):
            store.append("events", {"type": "note", "i": i})
        with store.batch():  # nested batches join the outer one
            store.append("runs", {"lever": "amp", "status": "queued"})
        assert len(store.all("events")) == 5  # the writer sees its buffered records
        assert store.path.read_bytes() == before  # the file does not, yet
        assert store.storage.writes == writes
    assert store.storage.writes == writes + 1
    assert [r["i"] for r in Store.open(store.directory, mode="read").all("events")] == [0, 1, 2, 3, 4]


def test_a_batch_that_raises_writes_nothing(store):
    kept = store.append("events", {"type": "note", "i": 0})
    before = store.path.read_bytes()
    writes = store.storage.writes
    with pytest.raises(RuntimeError, match="boom"):
        with store.batch():
            store.append("events", {"type": "note", "i": 1})
            store.update("events", kept["id"], {"i": 100})
            raise RuntimeError("boom")
    assert store.path.read_bytes() == before and store.storage.writes == writes
    assert store.all("events") == [kept]
    after = store.append("events", {"type": "note", "i": 2})
    assert after["seq"] == kept["seq"] + 1 and after["id"] == 2  # nothing of the failed batch survives


def test_a_failed_write_inside_a_batch_discards_the_whole_batch(store):
    before = store.path.read_bytes()
    with pytest.raises(StoreError, match="discarded"):
        with store.batch():
            store.append("events", {"type": "note", "i": 1})
            try:
                with store.batch():
                    store.append("events", {"type": "note", "i": 2})
                    raise KeyError("inner")
            except KeyError:
                pass
    assert store.path.read_bytes() == before and store.all("events") == []


def test_bad_records_are_refused_before_anything_is_written(store):
    before = store.path.read_bytes()
    with pytest.raises(ValueError, match="may not set 'seq'"):
        store.append("events", {"type": "note", "seq": 5})
    with pytest.raises(ValueError, match="unknown table 'lever'"):
        store.append("lever", {"x": 1})
    with pytest.raises(TypeError, match="not JSON data"):
        store.append("events", {"type": "note", "x": object()})
    with pytest.raises(ValueError, match="no key field 'name'"):
        store.upsert("facts", "name", {"value": 1})
    with store.batch():  # refusals inside a batch do not spoil it
        with pytest.raises(RecordNotFound):
            store.update("runs", 7, {"status": "failed"})
        store.append("events", {"type": "note", "ok": True})
    assert store.path.read_bytes() != before and [r["ok"] for r in store.all("events")] == [True]


def test_records_given_out_and_taken_in_are_copies(store):
    argv = ["python", "-m", "optseq.engine.bench"]
    rec = store.append("runs", {**SHAPED["runs"], "argv": argv})
    argv.append("--evil")
    rec["argv"].append("--evil")
    store.get("runs", rec["id"])["argv"].append("--evil")
    store.all("runs")[0]["note"] = "changed"  # all() hands out shallow copies: its nested values are read-only
    assert store.get("runs", rec["id"]) == {**rec, "argv": ["python", "-m", "optseq.engine.bench"]}


def test_two_writer_processes_share_one_store(store):
    store.append("events", {"type": "note", "k": "here-0"})
    proc = subprocess.Popen([sys.executable, str(HELPER), "append", str(store.directory), "there"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for i in range(1, 20):  # interleave with the other writer's acknowledged writes
            assert proc.stdout.readline().startswith("ack "), proc.stderr.read()
            store.append("events", {"type": "note", "k": f"here-{i}"})
    finally:
        proc.kill()
        proc.communicate()
    with Store.open(store.directory, mode="read") as reader:
        keys = [r["k"] for r in reader.all("events")]
        seqs = [r["seq"] for t in TABLES for r in reader.all(t)]
    assert [k for k in keys if k.startswith("here")] == [f"here-{i}" for i in range(20)]
    assert any(k.startswith("there") for k in keys) and len(seqs) == len(set(seqs))


def test_a_writer_meeting_a_held_lock_waits_says_so_then_names_the_holder(store):
    holder = spawn_holder(store.directory)
    try:
        said = []
        waiting = Store.open(store.directory, wait_s=0.6, on_wait=said.append)
        with pytest.raises(StoreLocked) as busy:
            waiting.append("events", {"type": "note", "k": "late"})
        waiting.close()
        assert f"optseq pid {holder.pid}" in str(busy.value) and "busy" in str(busy.value)
        assert "\n" not in str(busy.value) and busy.value.holder["pid"] == holder.pid
        assert said == [f"waiting for optseq pid {holder.pid} (started {busy.value.holder['started']}) to finish "
                        f"writing {store.directory} (up to 0.6 s)"]
        # a reader never waits for a writer
        with Store.open(store.directory, mode="read") as reader:
            assert reader.all("events") == []
    finally:
        holder.kill()
        holder.wait()


def test_a_held_lock_blocks_a_writer_only_until_its_holder_dies(store_dir):
    Store.open(store_dir).close()
    holder = spawn_holder(store_dir)
    writer = subprocess.Popen([sys.executable, str(HELPER), "write", str(store_dir), "600"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().startswith(f"waiting: waiting for optseq pid {holder.pid}")
        holder.send_signal(signal.SIGKILL)  # the kernel drops a dead holder's flock
        holder.wait()
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0 and out.strip() == "wrote 1", err
    finally:
        holder.kill()
        writer.kill()
    with Store.open(store_dir) as s:
        assert [r["k"] for r in s.all("events")] == ["written"]


def test_opening_takes_no_lock_and_close_ends_the_store(store_dir):
    with Store.open(store_dir, mode="auto") as s:
        assert not s.readonly
        s.append("events", {"type": "note", "i": 1})
        with Store.open(store_dir, mode="write") as t:  # a second writer opens at once
            t.append("events", {"type": "note", "i": 2})
        assert len(s.all("events")) == 2  # reads follow the other writer's commits
    with pytest.raises(StoreError, match="closed"):
        s.append("events", {"type": "note", "i": 3})


def test_a_reader_follows_the_writer(store):
    reader = Store.open(store.directory, mode="read")
    assert reader.readonly and reader.all("events") == []
    rec = store.append("events", {"type": "note", "i": 1})
    assert reader.all("events") == [rec]
    with store.batch():
        store.append("events", {"type": "note", "i": 2})
        assert len(reader.all("events")) == 1  # not visible until the batch commits
    assert len(reader.all("events")) == 2
    reader.reload()
    assert [r["i"] for r in reader.all("events")] == [1, 2]
    for write in (lambda: reader.append("events", {"type": "note"}), lambda: reader.update("runs", 1, {}),
                  lambda: reader.upsert("facts", "name", {"name": "x", "value": True}), lambda: reader.batch().__enter__(),
                  reader.recover_interrupted):
        with pytest.raises(StoreReadOnly, match="read-only"):
            write()
    reader.close()


def test_a_journal_tail_past_the_commit_is_ignored_then_cut(store):
    kept = store.append("events", {"type": "note", "i": 1})
    journal = store.directory / "journal" / "events.jsonl"
    committed = journal.read_bytes()
    with open(journal, "ab") as f:  # what a writer killed between its append and its commit leaves
        f.write(b'{"op":"i","id":2,"seq":99,"at":"x","r":{"i":"never committed"}}\n{"op":"i","id":3,"se')
    with Store.open(store.directory, mode="read") as reader:
        assert reader.all("events") == [kept]
    assert store.append("events", {"type": "note", "i": 2})["id"] == 2  # the next transaction cut the tail first
    assert journal.read_bytes().startswith(committed) and b"never committed" not in journal.read_bytes()
    assert [r["i"] for r in store.all("events")] == [1, 2]


def test_a_version_1_store_is_migrated_and_nothing_is_lost(store_dir):
    store_dir.mkdir(parents=True)
    v1 = {"meta": {"1": {"schema_version": 1, "seq": 4}},
          "levers": {"1": {"lever": "amp", "state": "ready", "seq": 4, "at": "2026-11-01T00:00:00+00:00"}},
          "runs": {"1": {"lever": "amp", "status": "succeeded", "seq": 1, "at": "2026-11-01T00:00:00+00:00"},
                   "2": {"lever": "amp", "status": "running", "pid": dead_pid(), "seq": 3,
                         "at": "2026-11-01T00:00:02+00:00"}},
          "decisions": {"1": {"lever": "amp", "outcome": "adopt", "seq": 2, "at": "2026-11-01T00:00:01+00:00"}}}
    (store_dir / "optseq.json").write_text(json.dumps(v1))
    with Store.open(store_dir, mode="read") as reader:  # a reader serves it as it is, writing nothing
        assert [r["status"] for r in reader.all("runs")] == ["succeeded", "running"]
        assert not (store_dir / "journal").exists()
    with Store.open(store_dir) as s:
        assert s.meta().schema_version == 2
        assert [(r["id"], r["seq"]) for r in s.all("runs")] == [(1, 1), (2, 3)]
        assert s.get("runs", 2)["status"] == "interrupted"  # its process is gone
        assert s.all("decisions")[0]["outcome"] == "adopt" and s.all("levers")[0]["lever"] == "amp"
        assert s.append("runs", {"lever": "amp", "status": "failed"})["id"] == 3 and s.append("events", {"type": "note"})["seq"] > 4


def test_since_gives_what_came_after_a_point_in_seq_order(store):
    store.append("events", {"type": "note", "k": "before"})
    mark = store.ends()
    run = store.append("runs", {"lever": "amp", "status": "running", "pid": os.getpid()})
    store.append("decisions", {"lever": "amp", "outcome": "adopt"})
    store.update("runs", run["id"], {"status": "succeeded"})
    lines = store.since(mark)
    assert [(t, line["op"], line["id"]) for t, line in lines] == [("runs", "i", 1), ("decisions", "i", 1),
                                                                    ("runs", "u", 1)]
    assert [line["seq"] for _, line in lines] == sorted(line["seq"] for _, line in lines)
    assert store.since(store.ends()) == []


def test_runs_in_flight_are_tracked_without_reading_the_runs(store):
    run = store.append("runs", {"lever": "amp", "status": "running", "pid": os.getpid()})
    store.update("runs", run["id"], {"pgid": 4242})
    assert store.active_runs() == [Active(run=run["id"], lever="amp", pid=os.getpid(), pgid=4242)]
    store.update("runs", run["id"], {"status": "failed"})
    assert store.active_runs() == []


def test_a_cluster_run_of_a_dead_process_is_detached_until_a_process_follows_it_again(store_dir):
    gone = dead_pid()
    with Store.open(store_dir) as s:
        remote = s.append("runs", {"lever": "amp", "status": "running", "pid": gone, "started": "x"})
        s.update("runs", remote["id"], {"submission_id": "optseq-ab-1-1", "passes": 1})
    with Store.open(store_dir) as s:
        assert [(r.id, r.status, r.submission_id) for r in s.recovered] == [(remote["id"], "detached", "optseq-ab-1-1")]
        record = s.get("runs", remote["id"])
        assert record["status"] == "running" and "optseq-ab-1-1" in record["note"]
        assert [(d.run, d.submission_id) for d in s.detached_runs()] == [(remote["id"], "optseq-ab-1-1")]
    with Store.open(store_dir) as s:
        assert s.recovered == []  # detached once: a later open neither interrupts nor re-detaches it
        s.update("runs", remote["id"], {"pid": os.getpid()})  # a process re-attached
        assert s.detached_runs() == [] and s.active_runs()[0].pid == os.getpid()


def test_read_mode_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such"
    with Store.open(missing, mode="read") as s:
        assert s.readonly and s.holder is None and s.all("levers") == [] and s.meta() == Meta()
        assert s.all("runs") == [] and s.snapshot() is None
        assert s.run_dir("r1") == missing / "runs" / "r1"
    assert not missing.exists()


def test_runs_left_running_by_a_dead_process_become_interrupted(store_dir):
    gone = dead_pid()
    with Store.open(store_dir) as s:
        lost = s.append("runs", {"lever": "amp", "status": "running", "pid": gone, "pgid": gone, "started": "x"})
        alive = s.append("runs", {"lever": "compile", "status": "running", "pid": os.getpid()})
        done = s.append("runs", {"lever": "cython", "status": "succeeded", "pid": gone})
    with Store.open(store_dir) as s:
        assert [r.id for r in s.recovered] == [lost["id"]] and s.recovered[0].pgid == gone
        recovered = s.get("runs", lost["id"])
        assert recovered["status"] == "interrupted" and recovered["ended"] and f"pid {gone}" in recovered["note"]
        assert recovered["seq"] == lost["seq"] and recovered["lever"] == "amp"
        assert s.get("runs", alive["id"]) == alive
        assert s.get("runs", done["id"]) == done
        again = s.recover_interrupted()  # our own pid is alive
        assert again == []
        marked = s.recover_interrupted(is_alive=lambda pid: False)
        assert [r.id for r in marked] == [alive["id"]] and s.get("runs", alive["id"])["status"] == "interrupted"


def test_a_newer_schema_is_refused_without_touching_the_file(store_dir):
    with Store.open(store_dir) as s:
        s.append("levers", {**SHAPED["levers"], "name": "amp"})
    path = store_dir / "optseq.json"
    data = json.loads(path.read_text())
    data["meta"]["1"]["schema_version"] = 3
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    for mode in ("write", "read", "auto"):
        with pytest.raises(StoreSchemaError, match=f"{path} has schema_version 3, newer than .* \\(2\\)"):
            Store.open(store_dir, mode=mode)
    assert path.read_bytes() == before
    data["meta"]["1"]["schema_version"] = 2
    path.write_text(json.dumps(data))
    with Store.open(store_dir, mode="write") as s:  # the refused opens released the lock
        assert s.all("levers")[0]["name"] == "amp"


def test_records_without_a_schema_version_are_refused(store_dir):
    store_dir.mkdir(parents=True)
    (store_dir / "optseq.json").write_text('{"levers":{"1":{"name":"amp"}}}')
    with pytest.raises(StoreSchemaError, match="no schema_version"):
        Store.open(store_dir)


@pytest.mark.parametrize("content", ['{"levers": {"1": {"name": "am', "[1, 2]", '{"runs":{"x":{}}}', "\xff\xfe"])
def test_a_corrupt_file_is_refused_and_never_overwritten(store_dir, content):
    store_dir.mkdir(parents=True)
    path = store_dir / "optseq.json"
    path.write_bytes(content.encode("latin-1"))
    for mode in ("write", "auto", "read"):
        with pytest.raises(StoreCorrupt) as err:
            Store.open(store_dir, mode=mode)
        assert str(err.value).startswith(f"{path} is corrupt: ") and "\n" not in str(err.value)
    assert path.read_bytes() == content.encode("latin-1")
    assert sorted(p.name for p in store_dir.iterdir()) == ["optseq.json"]  # nothing created beside it
    path.unlink()
    with Store.open(store_dir) as s:
        assert s.meta().seq == 0


def test_an_uncreatable_directory_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreUnwritable, match=f"cannot create store directory {blocker / 'state'}"):
        Store.open(blocker / "state")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_read_only_directory_is_refused_for_writing(tmp_path):
    directory = tmp_path / "state"
    with Store.open(directory) as s:
        s.append("events", {"type": "note", "i": 1})
    directory.chmod(0o555)
    try:
        with pytest.raises(StoreUnwritable, match=f"store directory {directory} is not writable"):
            Store.open(directory)
        with Store.open(directory, mode="read") as s:
            assert len(s.all("events")) == 1
    finally:
        directory.chmod(0o755)


def test_leftover_temp_files_are_removed_by_the_next_writer_only(store_dir):
    Store.open(store_dir).close()
    leftover = store_dir / ".optseq.json.dead1234.tmp"
    leftover.write_text('{"half": ')
    with Store.open(store_dir, mode="read") as reader:
        reader.all("events")
    assert leftover.exists()
    with Store.open(store_dir) as s:
        s.append("events", {"type": "note", "i": 1})  # the writer's transaction, under the lock, clears it
        assert temp_files(store_dir) == []


def test_run_dir_lives_under_runs(store):
    path = store.run_dir(17)
    assert path == store.directory / "runs" / "17" and path.is_dir()
    for bad in ("..", "a/b", ""):
        with pytest.raises(ValueError, match="cannot name a directory"):
            store.run_dir(bad)


def test_unknown_mode_is_refused(store_dir):
    with pytest.raises(ValueError, match="store mode must be one of write, read, auto"):
        Store.open(store_dir, mode="rw")
