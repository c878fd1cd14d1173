"""SIGKILL a writing process at many points: every acknowledged record survives and the lock is free."""
from __future__ import annotations

import pytest

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from optseq.state.store import digest
from optseq.state.store.layout import HISTORY
from optseq.state.store.store import Store
from tests.state.kill_writer import PAYLOAD

pytestmark = pytest.mark.slow  # forty SIGKILLed writers

HELPER = (Path(__file__).parents[1] / "kill_writer.py")
KILLS = 40
SEED_RECORDS = 300
"""Enough records that each write (about 0.5 MiB) takes milliseconds, so kills land inside it."""


def seed(directory: Path) -> None:
    with Store.open(directory) as s, s.batch():
        for i in range(SEED_RECORDS):
            s.append("events", {"type": "note", "k": f"seed-{i}", "p": PAYLOAD})


def run_and_kill(directory: Path, tag: str, rng: random.Random, how: str) -> list[str]:
    """Start a writer, SIGKILL it, return the acks it printed before dying.

    how: "anywhere" — after a random delay, from start-up through the first writes; "after-ack" — a random
    moment after its first ack; "mid-write" — held inside a write between its temp file and the replace,
    so that case is covered by construction, not by the luck of the timing.
    """
    argv = [sys.executable, str(HELPER), "append", str(directory), tag]
    if how == "mid-write":
        argv.append(str(rng.randint(1, 6)))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    if how == "after-ack":
        first = proc.stdout.readline()
        assert first.startswith("ack "), proc.stderr.read()
        lines.append(first)
        time.sleep(rng.uniform(0.0, 0.15))
    elif how == "mid-write":
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            if line == "replacing\n":
                break
            lines.append(line)
    else:
        time.sleep(rng.uniform(0.0, 0.35))
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err
    lines += out.splitlines(keepends=True)
    # A line without its newline was cut off mid-print: the call returned but the ack did not finish.
    return [word for line in lines if line.endswith("\n") for word in line.split()[1:]]


def check(store: Store, acked: set[str], facts: dict[str, int]) -> None:
    events = {r["k"] for r in store.all("events")}
    runs = {r["k"]: r for r in store.all("runs")}
    for ack in acked:
        kind, key = ack.split(":", 1)
        if kind == "e":
            assert key in events, ack
        elif kind == "r":
            assert key in runs, ack
        elif kind == "u":
            assert runs[key]["status"] == "succeeded", ack
    stored_facts = {r["name"]: r["i"] for r in store.all("facts")}
    for tag, i in facts.items():
        assert stored_facts[tag] >= i
    seqs = sorted(r["seq"] for t in ("events", "runs", "facts") for r in store.all(t))
    assert len(seqs) == len(set(seqs)) and seqs[-1] <= store.meta().seq
    assert all(r["status"] != "running" for r in runs.values())  # a dead writer's runs are recovered
    for table in HISTORY:  # the late lines' index and the digest stay right through every kill
        assert list(store.stream(table)) == store.all(table), table
    for table in digest.TABLES:
        assert store.recent(table) in (None, digest.started(store.all(table))), table


def test_every_acknowledged_write_survives_sigkill(tmp_path):
    directory = tmp_path / "state"
    seed(directory)
    rng = random.Random(20260301)
    acked: set[str] = set()
    facts: dict[str, int] = {}
    mid_write = 0
    for n in range(KILLS):
        tag = f"c{n}"
        for ack in run_and_kill(directory, tag, rng, ("anywhere", "after-ack", "mid-write")[n % 3]):
            if ack.startswith("f:"):
                facts[tag] = max(facts.get(tag, -1), int(ack.rsplit(":", 1)[1]))
            else:
                acked.add(ack)
        leftovers = list(directory.glob(".optseq.json.*.tmp"))
        assert len(leftovers) <= 1
        mid_write += bool(leftovers)
        with Store.open(directory, mode="write") as store:  # the dead writer's lock is free
            with store.batch():  # the next transaction clears what the dead one left
                pass
            assert list(directory.glob(".optseq.json.*.tmp")) == []
            check(store, acked, facts)
    # every "after-ack" writer acknowledged at least one write before it died
    assert len(acked) >= len(range(1, KILLS, 3))
    # every "mid-write" kill left its temp file, which the next open cleared
    assert mid_write >= len(range(2, KILLS, 3))
