"""What a sync reads of its own store: after a sync that only imported, the next one starts past what it imported
(issue 39, point 6: an incremental sync after a first sync of a long history read that whole history again)."""
from __future__ import annotations

import json
import signal

import pytest

from tests.state.sync.syncing import Team


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


def snapshot_and_ends(team: Team, store: str) -> tuple[dict | None, dict]:
    from optseq.state.store.store import Store

    with Store.open(team.root / store, mode="read") as s:
        return (s.snapshot() or {}).get("ends"), s.ends()


def levers(team: Team, store: str) -> dict[str, tuple]:
    status = json.loads(team.optseq(store, "status", "--json").stdout)
    return {lv["id"]: (lv["state"], lv.get("outcome")) for lv in status["levers"]}


def test_status_right_after_a_large_sync_replays_nothing(team):
    """The lever machine follows what a sync merges, in the import's transaction: the snapshot reflects every line,
    so the first `status` after a first sync of a long history reads the hot file alone (it replayed the whole
    history: 5.5 s after a first sync of 10,000 runs) and has nothing to keep. A sync of fewer lines than
    FOLLOW_AT (here 1, so each is followed) leaves them to the next command's catch-up."""
    team.optseq("A", "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "criterion 4 missed")
    team.optseq("A", "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x")
    team.optseq("A", "sync")
    team.optseq("B", "sync", OPTSEQ_TEST_FOLLOW_AT="1")  # B's first: a new store
    hot = team.root / "B" / "optseq.json"
    for round in range(2):
        snap, ends = snapshot_and_ends(team, "B")
        assert snap == ends, (round, snap, ends)
        before = hot.read_bytes()
        assert levers(team, "B") == levers(team, "A")
        assert hot.read_bytes() == before  # a replay would have kept its snapshot
        # then B writes (its snapshot moves on) and merges A's next decision on top of that
        team.optseq("B", "fact", "eval_dense", "true")
        team.optseq("A", "decide", "option_b", "reject", "--why", "re-measured")
        team.optseq("A", "sync")
        assert "fetched 1 writer" in team.optseq("B", "sync", OPTSEQ_TEST_FOLLOW_AT="1").stdout
    assert levers(team, "B")["option_b"] == ("rejected", "reject")
    # below the threshold the merge is caught up by status itself, to the same states
    team.optseq("A", "decide", "option_b", "adopt", "--why", "measured again")
    team.optseq("A", "sync")
    team.optseq("B", "sync")
    snap, ends = snapshot_and_ends(team, "B")
    assert snap != ends
    assert levers(team, "B") == levers(team, "A") and levers(team, "B")["option_b"] == ("adopted", "adopt")


def layout(doc) -> object:
    """A JSON value's keys, in their order, all the way down (a list's items and an id map's ranges left out)."""
    if isinstance(doc, dict):
        return [(k, layout(v) if k not in ("ends", "ids") else list(v)) for k, v in doc.items()]
    return type(doc).__name__


def test_the_sync_document_keeps_its_layout(team):
    """The hot file's `sync` document, read as a type and written from it, keeps the layout it was always written
    in, key for key: a sync killed before its push, a first sync that pushed, one that only imported, one after each
    had the other's."""
    def stored(store: str) -> dict:
        return json.loads((team.root / store / "optseq.json").read_text(encoding="utf-8"))["sync"]["1"]

    team.optseq("A", "fact", "eval_dense", "true")
    killed = team.optseq("A", "sync", code=-signal.SIGKILL, OPTSEQ_TEST_KILL_AT="sync-imported")
    top = ["writer", "pushed", "applied", "journaled", "remote", "last"]
    # its segment not pushed yet: no `last` (not a null one), as a sync killed there always left it
    assert [k for k in stored("A")] == top[:-1], killed.stderr
    team.optseq("A", "sync")
    team.optseq("B", "sync")  # B's first: it imports A's segment and has nothing of its own
    wa, wb = team.writer("A"), team.writer("B")
    tables = ["runs", "decisions", "criteria", "facts", "events"]
    pushed = ("pushed", [("n", "int"), ("commit", "str"), ("ends", tables), ("through", "list")])
    last = ("last", [("at", "str"), ("remote", "str"), ("seq", "int")])
    assert layout(stored("A")) == [("writer", "str"), pushed, ("applied", []), ("journaled", "bool"),
                                   ("remote", "str"), last]
    b = stored("B")
    assert [k for k, _ in layout(b)] == top and b["pushed"] == {"n": 0, "commit": None, "ends": b["pushed"]["ends"],
                                                               "through": []}
    assert dict(layout(b))["applied"] == [(wa, [("n", "int"), ("commit", "str"), ("ids", ["facts"])])]
    team.optseq("B", "fact", "eval_dense", "false")
    team.optseq("B", "sync")
    team.optseq("A", "sync")
    for store, other in (("A", wb), ("B", wa)):
        doc = stored(store)
        assert [k for k, _ in layout(doc)] == top and [k for k, _ in dict(layout(doc))["pushed"]] == [
            "n", "commit", "ends", "through"], store
        assert list(doc["applied"]) == [other] and list(doc["applied"][other]) == ["n", "commit", "ids"], store
        assert list(doc["last"]) == ["at", "remote", "seq"] and doc["journaled"] is True, store
