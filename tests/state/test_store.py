"""The store over real files: tables, sequence numbers, batches, the writer lock, recovery and refusals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tinydb import TinyDB

from state.store import (
    TABLES, RecordNotFound, Store, StoreCorrupt, StoreError, StoreLocked, StoreReadOnly, StoreSchemaError,
    StoreUnwritable,
)

HELPER = Path(__file__).with_name("kill_writer.py")


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "state" / "nested"


@pytest.fixture
def store(store_dir: Path):
    with Store.open(store_dir) as s:
        yield s


def spawn_holder(directory: Path) -> subprocess.Popen:
    """A real second process holding the writer lock; returns once it says so."""
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


def test_every_table_round_trips_through_the_file(store_dir):
    written = {}
    with Store.open(store_dir) as s:
        for n, table in enumerate(TABLES):
            rec = s.append(table, {"name": f"{table}-{n}", "nested": {"list": [1, 2.5, None, True]}, "n": n})
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


def test_seq_is_strictly_increasing_across_tables_in_call_order(store):
    returned = [store.append("levers", {"k": 0}), store.append("runs", {"k": 1})]
    with store.batch():
        returned += [store.append("events", {"k": 2}), store.append("decisions", {"k": 3})]
    returned.append(store.upsert("facts", "name", {"name": "device", "k": 4}))
    returned.append(store.append("criteria", {"k": 5}))
    returned.append(store.upsert("facts", "name", {"name": "device", "k": 6}))
    seqs = [r["seq"] for r in returned]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    stored = sorted((r for t in TABLES for r in store.all(t)), key=lambda r: r["seq"])
    assert [r["k"] for r in stored] == [0, 1, 2, 3, 5, 6]  # the replaced fact (k=4) is gone, k=6 is newest
    assert store.meta() == {"schema_version": 1, "seq": seqs[-1]}
    for r in stored:
        assert r["at"].endswith("+00:00") and len(r["at"]) == len("2026-01-01T00:00:00+00:00")


def test_update_keeps_seq_and_upsert_replaces_whole_record(store):
    run = store.append("runs", {"lever": "amp", "status": "running", "pid": 1})
    updated = store.update("runs", run["id"], {"status": "succeeded", "summary": {"speedup": 1.4}})
    assert updated == {**run, "status": "succeeded", "summary": {"speedup": 1.4}}
    first = store.upsert("facts", "name", {"name": "model", "hidden": 512, "old": True})
    second = store.upsert("facts", "name", {"name": "model", "hidden": 1024})
    assert second["id"] == first["id"] and second["seq"] > first["seq"]
    assert store.all("facts") == [second] and "old" not in second
    with pytest.raises(RecordNotFound, match="no record 42 in table 'runs'"):
        store.update("runs", 42, {"status": "failed"})


def test_korean_text_round_trips_and_the_file_is_compact_utf8(store_dir):
    title = "줄리아 포팅 결정 (Flux vs Torch.jl) — 인프라 먼저"
    with Store.open(store_dir) as s:
        s.append("levers", {"title": title, "tags": ["모델 크기", "AMP"]})
    raw = (store_dir / "optseq.json").read_bytes()
    assert title.encode("utf-8") in raw  # ensure_ascii=False: stored as text, not \uXXXX escapes
    assert b'", "' not in raw and b'": ' not in raw
    with Store.open(store_dir, mode="read") as s:
        assert s.all("levers")[0]["title"] == title
        assert s.all("levers")[0]["tags"] == ["모델 크기", "AMP"]


def test_plain_tinydb_reads_the_store_file(store):
    store.append("levers", {"name": "amp"})
    db = TinyDB(str(store.path), access_mode="r")
    assert [dict(d) for d in db.table("levers").all()] == [{k: v for k, v in store.all("levers")[0].items() if k != "id"}]
    db.close()


def test_each_call_outside_a_batch_is_one_atomic_replace(store):
    inode = store.path.stat().st_ino
    writes = store.storage.writes
    rec = store.append("events", {"e": 1})
    store.update("events", rec["id"], {"e": 2})
    store.upsert("facts", "name", {"name": "x"})
    assert store.storage.writes == writes + 3
    assert store.path.stat().st_ino != inode  # replaced, not rewritten in place


def test_a_batch_is_one_write_and_readable_before_it_lands(store):
    before = store.path.read_bytes()
    writes = store.storage.writes
    with store.batch():
        for i in range(5):
            store.append("events", {"i": i})
        with store.batch():  # nested batches join the outer one
            store.append("runs", {"status": "queued"})
        assert len(store.all("events")) == 5  # the writer sees its buffered records
        assert store.path.read_bytes() == before  # the file does not, yet
        assert store.storage.writes == writes
    assert store.storage.writes == writes + 1
    assert [r["i"] for r in Store.open(store.directory, mode="read").all("events")] == [0, 1, 2, 3, 4]


def test_a_batch_that_raises_writes_nothing(store):
    kept = store.append("events", {"i": 0})
    before = store.path.read_bytes()
    writes = store.storage.writes
    with pytest.raises(RuntimeError, match="boom"):
        with store.batch():
            store.append("events", {"i": 1})
            store.update("events", kept["id"], {"i": 100})
            raise RuntimeError("boom")
    assert store.path.read_bytes() == before and store.storage.writes == writes
    assert store.all("events") == [kept]
    after = store.append("events", {"i": 2})
    assert after["seq"] == kept["seq"] + 1 and after["id"] == 2  # nothing of the failed batch survives


def test_a_failed_write_inside_a_batch_discards_the_whole_batch(store):
    before = store.path.read_bytes()
    with pytest.raises(StoreError, match="discarded"):
        with store.batch():
            store.append("events", {"i": 1})
            try:
                with store.batch():
                    store.append("events", {"i": 2})
                    raise KeyError("inner")
            except KeyError:
                pass
    assert store.path.read_bytes() == before and store.all("events") == []


def test_bad_records_are_refused_before_anything_is_written(store):
    before = store.path.read_bytes()
    with pytest.raises(ValueError, match="may not set 'seq'"):
        store.append("events", {"seq": 5})
    with pytest.raises(ValueError, match="unknown table 'lever'"):
        store.append("lever", {"x": 1})
    with pytest.raises(TypeError, match="not JSON data"):
        store.append("events", {"x": object()})
    with pytest.raises(ValueError, match="no key field 'name'"):
        store.upsert("facts", "name", {"value": 1})
    with store.batch():  # refusals inside a batch do not spoil it
        with pytest.raises(RecordNotFound):
            store.update("runs", 7, {"status": "failed"})
        store.append("events", {"ok": True})
    assert store.path.read_bytes() != before and [r["ok"] for r in store.all("events")] == [True]


def test_records_given_out_and_taken_in_are_copies(store):
    argv = ["python", "-m", "engine.bench"]
    rec = store.append("runs", {"argv": argv})
    argv.append("--evil")
    rec["argv"].append("--evil")
    store.all("runs")[0]["argv"].append("--evil")
    assert store.get("runs", rec["id"])["argv"] == ["python", "-m", "engine.bench"]


def test_a_second_writer_process_fails_fast_naming_the_holder(store):
    proc = subprocess.run([sys.executable, str(HELPER), "try", str(store.directory), "write"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line, no traceback
    assert lines[0] == (f"store {store.directory} is in use by optseq pid {os.getpid()} "
                        f"(started {store.holder['started']}); open read-only or stop it")
    auto = subprocess.run([sys.executable, str(HELPER), "try", str(store.directory), "auto"],
                          capture_output=True, text=True, timeout=30)
    assert auto.returncode == 0 and auto.stdout.strip() == f"opened readonly=True holder={os.getpid()}"


def test_another_process_holding_the_lock_blocks_writes_until_it_is_killed(store_dir):
    holder = spawn_holder(store_dir)
    try:
        with pytest.raises(StoreLocked) as locked:
            Store.open(store_dir, mode="write")
        assert locked.value.holder["pid"] == holder.pid and f"pid {holder.pid}" in str(locked.value)
        with Store.open(store_dir, mode="auto") as reader:
            assert reader.readonly and reader.holder["pid"] == holder.pid
            assert reader.meta()["schema_version"] == 1 and reader.all("runs") == []
            for write in (lambda: reader.append("events", {}), lambda: reader.update("runs", 1, {}),
                          lambda: reader.upsert("facts", "name", {"name": "x"}), lambda: reader.batch().__enter__(),
                          reader.recover_interrupted):
                with pytest.raises(StoreReadOnly, match=f"read-only .*pid {holder.pid}"):
                    write()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (store_dir / "holder.json").exists()  # a SIGKILLed writer cannot clean up after itself...
    with Store.open(store_dir, mode="write") as s:  # ...yet its lock does not block the next writer
        assert not s.readonly and s.holder["pid"] == os.getpid()
        assert json.loads((store_dir / "holder.json").read_text())["pid"] == os.getpid()
    assert not (store_dir / "holder.json").exists()


def test_auto_opens_for_write_when_free_and_close_releases_the_lock(store_dir):
    with Store.open(store_dir, mode="auto") as s:
        assert not s.readonly
        s.append("events", {"i": 1})
    with Store.open(store_dir, mode="write") as s:
        assert len(s.all("events")) == 1
    with pytest.raises(StoreError, match="closed"):
        s.append("events", {"i": 2})


def test_a_reader_follows_the_writer(store):
    reader = Store.open(store.directory, mode="auto")
    assert reader.readonly and reader.holder["pid"] == os.getpid()
    assert reader.all("events") == []
    rec = store.append("events", {"i": 1})
    assert reader.all("events") == [rec]
    with store.batch():
        store.append("events", {"i": 2})
        assert len(reader.all("events")) == 1  # not visible until the batch lands
    assert len(reader.all("events")) == 2
    reader.reload()
    assert [r["i"] for r in reader.all("events")] == [1, 2]
    reader.close()


def test_read_mode_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such"
    with Store.open(missing, mode="read") as s:
        assert s.readonly and s.holder is None and s.all("levers") == [] and s.meta() == {}
        assert s.run_dir("r1") == missing / "runs" / "r1"
    assert not missing.exists()


def test_runs_left_running_by_a_dead_process_become_interrupted(store_dir):
    gone = dead_pid()
    with Store.open(store_dir) as s:
        lost = s.append("runs", {"lever": "amp", "status": "running", "pid": gone, "pgid": gone, "started": "x"})
        alive = s.append("runs", {"lever": "compile", "status": "running", "pid": os.getpid()})
        done = s.append("runs", {"lever": "cython", "status": "succeeded", "pid": gone})
    with Store.open(store_dir) as s:
        recovered = s.get("runs", lost["id"])
        assert recovered["status"] == "interrupted" and recovered["ended"] and f"pid {gone}" in recovered["note"]
        assert recovered["seq"] == lost["seq"] and recovered["lever"] == "amp"
        assert s.get("runs", alive["id"]) == alive
        assert s.get("runs", done["id"]) == done
        again = s.recover_interrupted()  # our own pid is alive
        assert again == []
        marked = s.recover_interrupted(is_alive=lambda pid: False)
        assert [r["id"] for r in marked] == [alive["id"]] and s.get("runs", alive["id"])["status"] == "interrupted"


def test_a_newer_schema_is_refused_without_touching_the_file(store_dir):
    with Store.open(store_dir) as s:
        s.append("levers", {"name": "amp"})
    path = store_dir / "optseq.json"
    data = json.loads(path.read_text())
    data["meta"]["1"]["schema_version"] = 2
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    for mode in ("write", "read", "auto"):
        with pytest.raises(StoreSchemaError, match=f"{path} has schema_version 2, newer than .* \\(1\\)"):
            Store.open(store_dir, mode=mode)
    assert path.read_bytes() == before
    data["meta"]["1"]["schema_version"] = 1
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
    assert sorted(p.name for p in store_dir.iterdir()) == ["lock", "optseq.json"]  # lock free, no sidecar left
    path.unlink()
    with Store.open(store_dir) as s:
        assert s.meta()["seq"] == 0


def test_an_uncreatable_directory_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreUnwritable, match=f"cannot create store directory {blocker / 'state'}"):
        Store.open(blocker / "state")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_read_only_directory_is_refused_for_writing(tmp_path):
    directory = tmp_path / "state"
    with Store.open(directory) as s:
        s.append("events", {"i": 1})
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
    Store.open(store_dir, mode="read").close()
    assert leftover.exists()
    with Store.open(store_dir) as s:
        assert temp_files(store_dir) == []
        s.append("events", {"i": 1})
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
