"""Shared fixtures: the repository's default plan and a fresh state directory per test."""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Bench children are started from the tests on a machine that may be busy: two OpenMP threads spinning on
# two oversubscribed cores made one model_size child 40 times slower than idle (over 300 s). The tests
# assert what a bench says, never how fast it is, so its children (which inherit this) use one thread.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# optseq's worktree cache (branch levers, compare) lives in the user's cache directory: a test's stay in a
# folder of the test session's own, which the runs the tests launch inherit; removed when the process that made it
# exits (each xdist worker that finds none set makes its own)
if "OPTSEQ_WORKTREES" not in os.environ:
    os.environ["OPTSEQ_WORKTREES"] = tempfile.mkdtemp(prefix="optseq-worktrees-")
    atexit.register(shutil.rmtree, os.environ["OPTSEQ_WORKTREES"], True)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"


@pytest.fixture
def plan_path() -> Path:
    return DEFAULT_PLAN


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def cli_env(db) -> dict:
    """Environment for running the real `optseq` in a subprocess against a fresh store, made as the console's first
    use makes it (a read of a folder with no store is refused: tests/test_cli_truth.py)."""
    from optseq.state.store.store import Store

    Store.open(db, mode="write").close()
    env = dict(os.environ)
    env["OPTSEQ_DB"] = str(db)
    env["OPTSEQ_PLAN"] = str(DEFAULT_PLAN)
    env.pop("OPTSEQ_PUREPYTHON", None)
    return env


OPTSEQ = [sys.executable, "-m", "optseq.console.cli"]
"""The CLI as the installed `optseq` script runs it (same entry point, same interpreter)."""


def pytest_collection_modifyitems(config, items):
    """Modules holding a slow test go first, the end-to-end ones at the top of tests/ (the longest single tests)
    ahead of them, each module kept whole (its module fixtures are built once): under `pytest -n` the workers
    start on the long tests and finish on short ones, instead of one worker ending the run alone on the
    end-to-end tests, which collect last."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    top = ROOT / "tests"
    items.sort(key=lambda item: (item.module.__name__ not in slow, item.path.parent != top))
