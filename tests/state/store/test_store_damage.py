"""A store that detects damage on every open and refuses it in one line, never repaired by truncation; `optseq
doctor` says where, and rebuilds a lost hot file from the journals keeping a copy. Through the real CLI on a real
store, damaged with plain file writes as a disk, an editor or a stray `>` would."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.store.store import Store, StoreCorrupt
from tests.conftest import OPTSEQ

COMMANDS = [("status",), ("status", "--json"), ("runs", "--json"), ("export",), ("whatif",),
            ("record", "julia_port", "torch_jl", "c4", "pass", "--evidence", "after damage"),
            ("fact", "eval_dense", "false"), ("decide", "amp", "reject", "--why", "after damage"),
            ("--run", "next")]
"""Every kind of command a user types: reads, writes and a run."""


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def history(cli_env, db) -> dict[str, bytes]:
    """A store with something in every journal (a failed run too); returns each journal's bytes."""
    for args in (("record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "ci"),
                 ("fact", "eval_dense", "true"), ("decide", "amp", "reject", "--why", "before damage")):
        assert cli(cli_env, *args).returncode == 0
    with Store.open(db) as s:
        s.append("runs", {"lever": "option_b", "status": "failed", "reason": "before damage"})
    assert sorted(journals(db)) == [f"{t}.jsonl" for t in ("criteria", "decisions", "events", "facts", "runs")]
    return journals(db)


CORPUS = {
    "truncated": (lambda raw: raw[:len(raw) // 2], ["is shorter"]),
    "garbage": (lambda raw: raw[:5] + b"\x00\xff\xfe garbage!\x00\x00\x00" + raw[20:],  # same length
                ["is damaged at byte 0", "not JSON"]),
    # the first record's line, same length, as valid JSON that is no record
    "wrong-shape": (lambda raw: b'["not", "a", "record"'.ljust(raw.index(b"\n") - 1) + b"]" + raw[raw.index(b"\n"):],
                    ["is damaged at byte 0", "not a record"]),
    "emptied": (lambda raw: b"", ["is shorter (0 bytes)"]),
}
READS_AND_WRITES = [("status",), ("runs", "--json"), ("export",), ("fact", "eval_dense", "false")]


@pytest.mark.slow
@pytest.mark.parametrize("table", ["runs", "decisions", "criteria", "facts", "events"])
@pytest.mark.parametrize("case", sorted(CORPUS))
def test_the_damage_corpus_in_each_journal_is_refused_in_one_line(history, cli_env, db, table, case):
    damage, words = CORPUS[case]
    path = db / "journal" / f"{table}.jsonl"
    path.write_bytes(damage(history[f"{table}.jsonl"]))
    damaged = journals(db)
    for args in READS_AND_WRITES:
        proc = cli(cli_env, *args)
        err = proc.stderr.strip()
        assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert str(path) in err and all(w in err for w in words), (args, err)
    assert journals(db) == damaged  # not a byte changed
    doctor = cli(cli_env, "doctor")
    assert doctor.returncode == 2 and str(path) in doctor.stdout, doctor.stdout


@pytest.mark.parametrize("content", [b'{"meta": {"1": {"schema_version": 2, "seq"', b"\x00\xff\xfe\x00",
                                     b'{"meta": [1, 2]}', b'{"levers": {"x": 1}}'],
                         ids=["truncated", "garbage", "wrong-shape-table", "wrong-shape-record"])
def test_the_damage_corpus_in_the_hot_file_is_refused_then_rebuilt(history, cli_env, db, content):
    hot = db / "optseq.json"
    hot.write_bytes(content)
    for args in READS_AND_WRITES:
        proc = cli(cli_env, *args)
        err = proc.stderr.strip()
        assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert str(hot) in err, err
    assert journals(db) == history and hot.read_bytes() == content
    assert cli(cli_env, "doctor", "--rebuild").returncode == 0
    assert [p.read_bytes() for p in db.glob("optseq.json.replaced-*")] == [content]
    assert cli(cli_env, "status").returncode == 0 and journals(db) == history


def journals(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((db / "journal").glob("*.jsonl"))}


def refused_by_every_command(env: dict, db: Path, before: dict[str, bytes], *words: str) -> None:
    for args in COMMANDS:
        proc = cli(env, *args)
        err = proc.stderr.strip()
        assert proc.returncode == 2, (args, proc.stdout, err)
        assert "Traceback" not in err and len(err.splitlines()) == 1, (args, err)
        assert all(w in err for w in words), (args, err)
        assert journals(db) == before, args  # not one journal byte lost or added


@pytest.mark.parametrize("hot", ["", "  \n", None], ids=["empty", "whitespace", "missing"])
def test_a_lost_hot_file_is_refused_everywhere_then_rebuilt_with_nothing_lost(history, cli_env, db, hot):
    before_runs = cli(cli_env, "runs", "--json").stdout
    path = db / "optseq.json"
    old = path.read_bytes()
    if hot is None:
        path.unlink()
    else:
        path.write_text(hot)
    refused_by_every_command(cli_env, db, history, str(path), "optseq doctor --rebuild")

    doctor = cli(cli_env, "doctor")
    assert doctor.returncode == 2 and "missing or empty beside journals" in doctor.stdout, doctor.stdout
    rebuilt = cli(cli_env, "doctor", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert f"rebuilt {path}" in rebuilt.stdout
    if hot is not None:  # the replaced file is kept beside, as it was
        kept = [p for p in db.iterdir() if p.name.startswith("optseq.json.replaced-")]
        assert len(kept) == 1 and kept[0].read_text() == hot
    assert journals(db) == history
    assert cli(cli_env, "runs", "--json").stdout == before_runs  # the whole history, as it was
    status = json.loads(cli(cli_env, "status", "--json").stdout)
    assert {v["id"]: v["state"] for v in status["levers"]}["julia_port"] == "decided"
    assert cli(cli_env, "fact", "eval_dense", "false").returncode == 0  # and it takes writes again
    assert old  # the hot file had been a real one


@pytest.mark.parametrize("damage, words", [
    (lambda raw: raw[:40] + b"\x00\xff garbage \x00" + raw[52:], ["is damaged at byte 0", "not JSON"]),
    (lambda raw: raw.replace(b'"reject"', b'"adopt!"', 1), ["does not match the checksum"]),
    (lambda raw: b'{"op":"u","id":1,"r":[1,2]}\n' + raw[len(b'{"op":"u","id":1,"r":[1,2]}\n'):],
     ["is damaged at byte 0", "fields (r) are not an object"]),
], ids=["garbage", "changed-digits", "wrong-shape"])
def test_damage_inside_a_committed_journal_is_refused_naming_the_byte(history, cli_env, db, damage, words):
    path = db / "journal" / "decisions.jsonl"
    path.write_bytes(damage(history["decisions.jsonl"]))
    damaged = journals(db)
    refused_by_every_command(cli_env, db, damaged, str(path), *words)
    doctor = cli(cli_env, "doctor")
    assert doctor.returncode == 2 and str(path) in doctor.stdout, doctor.stdout
    # a sound hot file is the word on what was committed: no rebuild over a journal that disagrees with it
    assert cli(cli_env, "doctor", "--rebuild").returncode == 2
    assert journals(db) == damaged


@pytest.mark.parametrize("meta", [{"ends": "runs"}, {"ids": [1, 2]}, {"ends": {"runs": -5}}, {"sums": {"x": "y"}}],
                         ids=["ends-string", "ids-list", "negative-end", "sums-text"])
def test_a_hot_file_with_a_malformed_meta_is_refused_in_one_line(history, cli_env, db, meta):
    path = db / "optseq.json"
    data = json.loads(path.read_text())
    data["meta"]["1"].update(meta)
    path.write_text(json.dumps(data))
    refused_by_every_command(cli_env, db, history, str(path), "is corrupt: meta.")
    rebuilt = cli(cli_env, "doctor", "--rebuild")  # a damaged hot file is rebuilt like a lost one
    assert rebuilt.returncode == 0 and cli(cli_env, "status").returncode == 0, rebuilt.stdout + rebuilt.stderr


def test_a_dead_writers_tail_is_cut_only_with_a_copy_kept(history, cli_env, db):
    path = db / "journal" / "events.jsonl"
    tail = b'{"op":"i","id":99,"seq":999,"r":{"type":"half'
    with open(path, "ab") as f:
        f.write(tail)
    assert cli(cli_env, "status").returncode == 0  # a reader never sees a tail past the commit
    assert cli(cli_env, "fact", "eval_dense", "false").returncode == 0  # a writer cuts it ...
    kept = list(path.parent.glob("events.jsonl.cut-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == tail  # ... keeping what it cut
    assert path.read_bytes().startswith(history["events.jsonl"])


WRITER = """
import resource, signal, sys
from optseq.state.store.store import Store, StoreUnwritable
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
s = Store.open(sys.argv[1])
s.append("events", {"type": "note", "n": 1})
print("seen:", [r["n"] for r in s.all("events")])  # a long-lived process (the console) has read its journals
hot = (s.directory / "optseq.json").stat().st_size
journal = (s.directory / "journal" / "events.jsonl").stat().st_size
# room for the journal's next line, none for the hot file's replace: the commit fails half way
resource.setrlimit(resource.RLIMIT_FSIZE, (journal + 300, resource.RLIM_INFINITY))
assert hot > journal + 300, (hot, journal)
try:
    s.append("events", {"type": "note", "n": 2, "pad": "x" * 50})
except StoreUnwritable as exc:
    print("refused:", exc)
print("seen:", [r["n"] for r in s.all("events")])
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("next id:", s.append("events", {"type": "note", "n": 3})["id"])
print("seen:", [r["n"] for r in s.all("events")])
"""


def test_a_commit_that_failed_is_invisible_in_the_process_that_made_it(tmp_path):
    directory = tmp_path / "state"
    with Store.open(directory) as s:
        s.append("levers", {"lever": "amp", "state": "ready", "pad": "y" * 2000})  # a hot file larger than a journal line
    proc = subprocess.run([sys.executable, "-c", WRITER, str(directory)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "seen: [1]" and lines[1].startswith("refused: cannot write"), lines
    assert lines[2] == "seen: [1]", lines  # not the record whose commit failed
    assert lines[3] == "next id: 2" and lines[4] == "seen: [1, 3]", lines
    with Store.open(directory, mode="read") as fresh:  # a fresh reader agrees with the writer
        assert [r["n"] for r in fresh.all("events")] == [1, 3]
    assert list((directory / "journal").glob("events.jsonl.cut-*"))  # the failed commit's line, kept aside


def test_doctor_on_a_sound_store_says_so_file_by_file(history, cli_env, db):
    proc = cli(cli_env, "doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": ok (") == 1 + len(history)
    refused = cli(cli_env, "doctor", "--rebuild")
    assert refused.returncode == 2 and "nothing to rebuild" in refused.stderr
    assert not [p for p in db.iterdir() if "replaced" in p.name]


def test_a_store_from_before_checksums_opens_and_gains_them(tmp_path):
    directory = tmp_path / "state"
    with Store.open(directory) as s:
        s.append("events", {"type": "note", "n": 1})
    hot = directory / "optseq.json"
    data = json.loads(hot.read_text())
    del data["meta"]["1"]["sums"]
    hot.write_text(json.dumps(data))
    with Store.open(directory) as s:
        assert [r["n"] for r in s.all("events")] == [1]
        s.append("events", {"type": "note", "n": 2})
        assert set(s.meta().sums or {}) >= {"events", "runs"}
    raw = (directory / "journal" / "events.jsonl").read_bytes()
    (directory / "journal" / "events.jsonl").write_bytes(raw.replace(b'"n":1', b'"n":7'))
    with pytest.raises(StoreCorrupt, match="does not match the checksum"):
        Store.open(directory, mode="read")
