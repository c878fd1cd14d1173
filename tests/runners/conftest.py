"""A real local Ray cluster for the runner tests, started once per session (never a mock client)."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    if os.environ.get("OPTSEQ_REQUIRE_RAY") == "1":
        import ray  # noqa: F401  make test installs ray[default]: its absence is a failure there
    else:
        pytest.importorskip("ray", reason="ray[default] not installed (make test installs it)")
    from optseq.state.runners.local_cluster import Cluster

    cluster = Cluster(tmp_path_factory.mktemp("ray", numbered=True)).start()
    try:
        yield cluster
    finally:
        cluster.stop()
