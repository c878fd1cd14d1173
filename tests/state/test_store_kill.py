"""SIGKILL a writing process at many points: every acknowledged record survives and the lock is free."""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from state.store import Store
from tests.state.kill_writer import PAYLOAD

HELPER = Path(__file__).with_name("kill_writer.py")
KILLS = 40
SEED_RECORDS = 300
"""Enough records that each write (about 0.5 MiB) takes milliseconds, so kills land inside it."""


def seed(directory: Path) -> None:
    with Store.open(directory) as s, s.batch():
        for i in range(SEED_RECORDS):
            s.append("events", {"k": f"seed-{i}", "p": PAYLOAD})


def run_and_kill(directory: Path, tag: str, rng: random.Random, wait_for_ack: bool) -> list[str]:
    """Start a writer, SIGKILL it after a random delay, return the acks it printed before dying."""
    proc = subprocess.Popen([sys.executable, str(HELPER), "append", str(directory), tag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    if wait_for_ack:
        first = proc.stdout.readline()
        assert first.startswith("ack "), proc.stderr.read()
        lines.append(first)
        time.sleep(rng.uniform(0.0, 0.15))
    else:
        time.sleep(rng.uniform(0.0, 0.35))  # lands anywhere from start-up through the first writes
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
    assert len(seqs) == len(set(seqs)) and seqs[-1] <= store.meta()["seq"]
    assert all(r["status"] != "running" for r in runs.values())  # a dead writer's runs are recovered


def test_every_acknowledged_write_survives_sigkill(tmp_path):
    directory = tmp_path / "state"
    seed(directory)
    rng = random.Random(20260301)
    acked: set[str] = set()
    facts: dict[str, int] = {}
    mid_write = 0
    for n in range(KILLS):
        tag = f"c{n}"
        for ack in run_and_kill(directory, tag, rng, wait_for_ack=n % 3 != 0):
            if ack.startswith("f:"):
                facts[tag] = max(facts.get(tag, -1), int(ack.rsplit(":", 1)[1]))
            else:
                acked.add(ack)
        leftovers = list(directory.glob(".optseq.json.*.tmp"))
        assert len(leftovers) <= 1
        mid_write += bool(leftovers)
        with Store.open(directory, mode="write") as store:  # the dead writer's lock is free
            assert list(directory.glob(".optseq.json.*.tmp")) == []
            check(store, acked, facts)
    assert len(acked) > KILLS  # the writers got real work done between kills
    assert mid_write >= 3, f"only {mid_write} of {KILLS} kills landed between temp file and replace"
