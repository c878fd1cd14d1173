"""What a sync reads of its own store: after a sync that only imported, the next one starts past what it imported
(issue 39, point 6: an incremental sync after a first sync of a long history read that whole history again)."""
from __future__ import annotations

import pytest

from tests.sync.syncing import Team


@pytest.fixture
def team(tmp_path):
    return Team(tmp_path)


def kept_and_ends(team: Team, store: str) -> tuple[dict, dict]:
    from optseq.state.store.store import Store

    with Store.open(team.root / store, mode="read") as s:
        return s.kept("sync")["pushed"]["ends"], s.ends()


def test_a_sync_that_only_imported_starts_the_next_past_the_import(team):
    for value in ("true", "false", "true"):
        team.optseq("A", "fact", "eval_dense", value)
    team.optseq("A", "sync")
    assert "fetched 1 writer" in team.optseq("B", "sync").stdout
    pushed_ends, ends = kept_and_ends(team, "B")
    assert pushed_ends == ends  # nothing of B's own waits, so nothing before these ends is read again
    # B's own record written after it is still pushed, and only it
    team.optseq("B", "fact", "eval_dense", "false")
    said = team.optseq("B", "sync").stdout
    assert said.startswith("pushed 1 segment (1 records)"), said
    team.optseq("A", "sync")
    assert team.records("A").keys() == team.records("B").keys()
