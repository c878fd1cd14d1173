"""A real local Ray cluster for the runner tests, started once per session (never a mock client)."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    if os.environ.get("OPTSEQ_REQUIRE_RAY") == "1":
        import ray  # noqa: F401  make test installs ray[default]: its absence is a failure there
    else:
        pytest.importorskip("ray", reason="ray[default] not installed (make test installs it)")
    from optseq.state.runners.local_cluster import Cluster

    # Ray's socket paths (temp dir + session + sockets/plasma_store) must fit AF_UNIX's 107 bytes: pytest's
    # temp dirs, deeper under a parallel worker (popen-gwN), do not leave room
    temp = Path(tempfile.mkdtemp(prefix="optseq-ray-"))
    cluster = Cluster(temp).start()
    try:
        yield cluster
    finally:
        groups = {proc.pid for proc in cluster.nodes.values()}
        cluster.stop()
        shutil.rmtree(temp, ignore_errors=True)
        # a process killed is gone a moment later, not at once: wait for that (a hang guard, not a budget)
        end = time.monotonic() + 60
        while (left := _live_in_groups(groups)) and time.monotonic() < end:
            time.sleep(0.1)
        assert not left, f"Ray processes outlived the cluster's stop: {left}"  # they would load the next tests


def _live_in_groups(groups: set[int]) -> list[str]:
    """`pid name` of every process still alive (not a zombie) in one of the process groups."""
    left = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace").read()
        except OSError:  # gone meanwhile
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if rest[0] != "Z" and int(rest[2]) in groups:  # fields after the name: state, ppid, pgrp
            left.append(f"{entry} {name}")
    return left
