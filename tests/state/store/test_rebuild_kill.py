"""`optseq doctor --rebuild` killed halfway, 30 times (issue 33, point 2): the real CLI in a subprocess, SIGKILLed at
the rebuild's step boundaries (OPTSEQ_TEST_KILL_AT: state/store/aside.py), several times in a row on one store.
After every kill the damaged hot file's exact bytes are kept wherever the hot file changed, the next reader leaves
no run `running` that no process holds, and a second rebuild either completes or says the store is sound only
when it is."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.store.layout import RUNS_DIR
from optseq.state.store.locks import LeverLock
from optseq.state.store.store import Store
from tests.conftest import DEFAULT_PLAN, OPTSEQ

STEPS = ("locked", "keep-half", "keep-verified", "keep-linked", "hot-half", "hot-written", "hot-renamed", "done")
"""Every boundary between two of the rebuild's writes, in order (state/store/doctor.py, state/store/aside.py)."""
IN_FLIGHT = 100
LEVERS = ("option_b", "julia_port", "amp", "tensorrt")
HELD = "compile"
"""The lever whose run this test's process really holds: it is running, and must stay so."""


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """A store with IN_FLIGHT runs in flight whose optseq is gone (most with a dead pid, some with pid 1: a pid from
    history that another process has now), finished runs, one run held by this process, and its hot file cut in
    half; with this process holding the held run's lever lock throughout."""
    db = tmp_path_factory.mktemp("rebuild") / "template"
    gone = dead_pid()
    lock = LeverLock(db / RUNS_DIR, HELD)
    with Store.open(db) as s:
        with s.batch():
            for i in range(IN_FLIGHT):
                s.append("runs", {"lever": LEVERS[i % len(LEVERS)], "status": "running", "started": "x",
                                  "pid": 1 if i % 7 == 0 else gone, "pgid": gone})
                if i % 10 == 0:
                    s.append("runs", {"lever": LEVERS[i % len(LEVERS)], "status": "failed", "pid": gone})
            s.append("facts", {"name": "eval_dense", "value": True})
        assert lock.try_acquire({"lever": HELD}) is None
        held = s.append("runs", {"lever": HELD, "status": "running", "started": "x", "pid": os.getpid()})
    hot = db / "optseq.json"
    hot.write_bytes(hot.read_bytes()[: hot.stat().st_size // 2])
    try:
        yield db, hot.read_bytes(), held["id"]
    finally:
        lock.release()


@pytest.fixture
def copies():
    """Copies of the template store, each with the held run's lever lock taken by this process, as in the
    template."""
    locks = []

    def copy(template: Path, db: Path) -> Path:
        shutil.copytree(template, db)
        locks.append(LeverLock(db / RUNS_DIR, HELD))
        assert locks[-1].try_acquire({"lever": HELD}) is None
        return db

    yield copy
    for lock in locks:
        lock.release()


def cli(db: Path, *args: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    env.pop("OPTSEQ_TEST_KILL_AT", None)
    if kill_at:
        env["OPTSEQ_TEST_KILL_AT"] = kill_at
    return subprocess.run([*OPTSEQ, *args], capture_output=True, text=True, env=env, timeout=300)


def kept_copies(db: Path) -> list[Path]:
    return sorted(p for p in db.glob("optseq.json.replaced-*") if not p.name.endswith(".tmp"))


def assert_original_kept(db: Path, original: bytes, when: str, read: bool = False) -> None:
    """The damaged hot file as it was, or the rebuilt one (whole, where no reader has written it since: `read`)
    with the damaged one's bytes kept beside it exactly, once."""
    hot = db / "optseq.json"
    if hot.read_bytes() == original:
        return  # untouched: nothing needs keeping yet
    # the hot file changed only by one whole rename: it is the rebuilt file, and the damaged one is kept exactly
    assert [p.read_bytes() for p in kept_copies(db)] == [original], when
    data = json.loads(hot.read_bytes())
    whole = data.get("meta", {}).get("1", {}).get("rebuilt_at") and (read or len(data.get("active", {})) ==
                                                                     IN_FLIGHT + 1)
    assert whole, (when, "the hot file is neither the damaged one nor a whole rebuilt one", data.get("meta"))


def statuses(db: Path, original: bytes, when: str) -> dict[int, str] | None:
    """The runs as the next reader leaves them (it recovers what it can), or None where it refuses the damaged
    hot file (in one line)."""
    proc = cli(db, "runs", "--json")
    if (db / "optseq.json").read_bytes() == original:
        err = proc.stderr.strip()
        assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (when, err)
        assert str(db / "optseq.json") in err, (when, err)
        return None
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, (when, proc.stderr)
    return {r["id"]: r["status"] for r in json.loads(proc.stdout)["runs"]}


def assert_none_left_running(found: dict[int, str] | None, held: int, when: str) -> None:
    if found is None:
        return
    running = sorted(rid for rid, status in found.items() if status == "running")
    assert running == [held], (when, running)  # every run no process holds is recovered; the held one runs on


def test_a_rebuild_killed_at_30_points_keeps_the_original_and_leaves_no_run_running_unheld(damaged, copies,
                                                                                               tmp_path):
    template, original, held = damaged
    rng = random.Random(2033)
    kills, chain_no = 0, 0
    said_sound = 0
    while kills < 30:
        chain_no += 1
        db = copies(template, tmp_path / f"store-{chain_no}")
        for _ in range(rng.randint(1, 3)):  # killed again and again before a rebuild completes
            at = rng.choice(STEPS)
            when = f"chain {chain_no}, kill {kills + 1} at {at}"
            was_rebuilt = (db / "optseq.json").read_bytes() != original
            was_kept = [p.read_bytes() for p in kept_copies(db)] == [original]
            proc = cli(db, "doctor", "--rebuild", kill_at=at)
            if was_rebuilt:  # a rebuild killed after its rename left a sound hot file: said so, nothing written
                assert proc.returncode == 2 and "is sound: nothing to rebuild" in proc.stderr, (when, proc.stderr)
                said_sound += 1
            elif was_kept and at.startswith("keep"):  # the copy an earlier kill kept is the copy: no step to die at
                assert proc.returncode == 0 and "kept there by an earlier rebuild" in proc.stdout, (when, proc.stdout)
            else:
                assert proc.returncode == -signal.SIGKILL, (when, proc.returncode, proc.stderr)
                kills += 1
            assert_original_kept(db, original, when, read=was_rebuilt)  # a reader came after the earlier rebuild
            assert_none_left_running(statuses(db, original, when), held, when)
            assert_original_kept(db, original, when + ", after the reader", read=True)
        when = f"chain {chain_no}, the rebuild after its kills"
        again = cli(db, "doctor", "--rebuild")
        if (db / "optseq.json").read_bytes() != original and "is sound" in again.stderr:
            assert again.returncode == 2, (when, again.stderr)  # sound: the rebuilt file, whose runs are recovered
        else:
            assert again.returncode == 0 and "Traceback" not in again.stderr, (when, again.stdout, again.stderr)
        assert_original_kept(db, original, when, read=again.returncode == 2)
        found = statuses(db, original, when)
        assert_none_left_running(found, held, when)
        assert len(found) == IN_FLIGHT + IN_FLIGHT // 10 + 1  # the whole history, as it was
        assert sum(s == "interrupted" for s in found.values()) == IN_FLIGHT
        assert not list(db.glob(".optseq.json.*.tmp"))  # what killed rebuilds left half written is gone
    assert said_sound  # the seed chains kills past a finished rename too


def test_a_kept_copy_of_the_same_name_is_never_written_over(damaged, copies, tmp_path):
    template, original, held = damaged
    db = copies(template, tmp_path / "store")
    # every name a rebuild in the coming minutes could choose is an older copy already
    import datetime as dt

    now = dt.datetime.now(dt.timezone.utc)
    older = {}
    for s in range(-5, 120):
        name = db / f"optseq.json.replaced-{now + dt.timedelta(seconds=s):%Y%m%dT%H%M%SZ}"
        older[name] = f"an older copy {s}".encode()
        name.write_bytes(older[name])
    proc = cli(db, "doctor", "--rebuild")
    assert proc.returncode == 0, proc.stderr
    assert all(name.read_bytes() == raw for name, raw in older.items())
    new = [p for p in kept_copies(db) if p not in older]
    assert len(new) == 1 and new[0].name.endswith("-2") and new[0].read_bytes() == original, new


def test_a_hot_file_an_older_rebuild_left_halfway_is_recovered_by_the_next_reader(damaged, copies, tmp_path):
    """An older optseq's rebuild wrote its meta first and its runs in flight one by one: killed halfway, it left a
    sound file that knows of some of them. The next reader checks a rebuilt file against the runs journal."""
    template, original, held = damaged
    db = copies(template, tmp_path / "store")
    assert cli(db, "doctor", "--rebuild").returncode == 0
    hot = db / "optseq.json"
    data = json.loads(hot.read_bytes())
    rows = sorted(data["active"].items(), key=lambda kv: int(kv[0]))
    # as the older rebuild wrote them: a third of the rows, without the mark of a row read from the journal
    data["active"] = {k: {f: v for f, v in row.items() if f != "from_journal"} for k, row in rows[: len(rows) // 3]}
    hot.write_text(json.dumps(data))
    assert cli(db, "doctor", "--rebuild").returncode == 2  # sound, as it was then ...
    found = statuses(db, original, "the older rebuild's file")
    assert_none_left_running(found, held, "the older rebuild's file")  # ... and no run stays running forever
    assert sum(s == "interrupted" for s in found.values()) == IN_FLIGHT


def store_seen(db: Path) -> tuple:
    """What another process can see of the store folder: its names, and which file the hot file is."""
    try:
        names = tuple(sorted(os.listdir(db)))
        inode = os.stat(db / "optseq.json").st_ino
    except FileNotFoundError:  # a name gone between the two looks: seen again next time
        return ()
    return names, inode


def test_a_rebuild_killed_from_outside_as_the_store_folder_changes_keeps_the_same_promises(damaged, copies, tmp_path):
    """Not at its own step boundaries: SIGKILLed from outside at the k-th change another process sees in the store
    folder (a file made, renamed or removed), wherever that falls in the rebuild."""
    template, original, held = damaged
    rng = random.Random(33)
    for n in range(8):
        db = copies(template, tmp_path / f"store-{n}")
        k = rng.randint(1, 8)
        env = {**os.environ, "OPTSEQ_DB": str(db), "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
        env.pop("OPTSEQ_TEST_KILL_AT", None)
        seen, changes = store_seen(db), 0
        proc = subprocess.Popen([*OPTSEQ, "doctor", "--rebuild"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while proc.poll() is None and changes < k:
                now = store_seen(db)
                if now and now != seen:
                    seen, changes = now, changes + 1
            proc.kill()
        finally:
            proc.wait()
        when = f"killed from outside at change {k} ({changes} seen)"
        assert_original_kept(db, original, when)
        assert_none_left_running(statuses(db, original, when), held, when)
        again = cli(db, "doctor", "--rebuild")
        assert again.returncode == 0 or (again.returncode == 2 and "is sound" in again.stderr
                                         and (db / "optseq.json").read_bytes() != original), (when, again.stderr)
        assert_original_kept(db, original, when, read=again.returncode == 2)
        found = statuses(db, original, when)
        assert_none_left_running(found, held, when)
        assert sum(s == "interrupted" for s in found.values()) == IN_FLIGHT
