"""Writers syncing at once, and a sync killed at each of its steps: every record of every writer in every store,
once (issue 39, point 5)."""
from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys

import pytest

from tests.conftest import OPTSEQ
from tests.state.sync.syncing import Team


@pytest.fixture
def team(tmp_path):
    return Team(tmp_path)


def _converged(team: Team, stores: list[str]) -> None:
    """Once everyone has pushed and then fetched: the same records everywhere, each once (Team.records asserts)."""
    for _ in range(2):
        for store in stores:
            team.optseq(store, "sync")
    seen = {store: team.records(store) for store in stores}
    everything = set().union(*(r.keys() for r in seen.values()))
    for store in stores:
        assert seen[store].keys() == everything, (store, sorted(everything - seen[store].keys())[:5])
    for store in stores:  # each writer's own records, all of them, in every store
        mine = {k for k in seen[store] if k[1] == team.writer(store)}
        assert mine and all(mine <= r.keys() for r in seen.values())


@pytest.mark.parametrize("writers,rounds", [(2, 5), (4, 3)])
def test_writers_syncing_at_once_in_a_loop(team, writers, rounds):
    stores = [f"W{i}" for i in range(writers)]
    cli = " ".join(shlex.quote(a) for a in OPTSEQ)
    procs = []
    for i, store in enumerate(stores):
        loop = "; ".join(f"{cli} fact eval_dense {'true' if (i + r) % 2 else 'false'} && {cli} sync || exit 1"
                         for r in range(rounds))
        procs.append(subprocess.Popen(["bash", "-c", loop], env=team.env(store), cwd=team.repo,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (out, err)
        assert out.count("to refs/optseq/writers/") == rounds, out
    _converged(team, stores)
    facts = [k for k in team.records(stores[0]) if k[0] == "facts"]
    assert len(facts) == writers * rounds


STEPS = ("sync-fetched", "sync-built", "sync-imported", "sync-pushed")


def test_a_sync_killed_at_each_step_then_completed(team):
    follow = {"OPTSEQ_TEST_FOLLOW_AT": "1"}  # A's lever machine follows each merge in its transaction (sync_cmd.py)
    for store in ("A", "B"):
        team.optseq(store, "sync")
    for i, step in enumerate(STEPS * 2):
        team.optseq("A", "fact", "eval_dense", "true" if i % 2 else "false")
        team.optseq("B", "fact", "eval_dense", "false" if i % 2 else "true")
        team.optseq("B", "sync")
        proc = team.optseq("A", "sync", code=None, OPTSEQ_TEST_KILL_AT=step, **follow)
        assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, proc.stderr)
        if i >= len(STEPS) and step != "sync-pushed":  # killed twice in a row before a sync completes (after a
            # kill past the push, the next sync finds the segment on the remote: nothing to push, no step to die at)
            proc = team.optseq("A", "sync", code=None, OPTSEQ_TEST_KILL_AT=step, **follow)
            assert proc.returncode == -signal.SIGKILL, (step, proc.returncode, proc.stderr)
        said = team.optseq("A", "sync", **follow).stdout
        assert "fetched" in said or "nothing new from other writers" in said, said
        _converged(team, ["A", "B"])
        # the snapshot a merge kept is the machine of the records it holds: the fact B wrote last is A's too
        status = json.loads(team.optseq("A", "status", "--json").stdout)
        assert status["facts"]["eval_dense"] is (i % 2 == 0), (step, status["facts"])
    for store in ("A", "B"):
        facts = [k for k in team.records("B") if k[0] == "facts" and k[1] == team.writer(store)]
        assert len(facts) == 2 * len(STEPS), store
