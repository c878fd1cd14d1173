"""The console's sync (S, issue 39 point 4): it runs the CLI's sync against the remote the store last synced with,
else the plan repository's origin (real bare `file://` remotes), on a worker thread, merges another writer's records
and names their writer; a sync that cannot run (no remote) says so in one line and changes nothing. And `optseq runs`
names each run's writer once a store holds two writers' runs."""
from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from optseq.console.tui.app import make_app
from tests.console.test_app import select_lever
from tests.state.lifecycle.test_watch import PLAN
from tests.state.sync.syncing import Team, git


@pytest.fixture(autouse=True)
def _steady_env(monkeypatch):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


def test_s_syncs_merges_another_writers_records_and_names_the_writer(tmp_path, monkeypatch):
    team = Team(tmp_path)
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x in A's numbers")
    team.optseq("A", "sync")
    team.optseq("B", "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")  # B's own store, never synced
    wa = team.writer("A")
    monkeypatch.setenv("OPTSEQ_WRITER", "B")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            await pilot.press("S")
            await app.workers.wait_for_complete()
            await pilot.pause()
            said = _messages(app)
            assert any(m.startswith("sync with origin done: ") and wa in m for m in said), said
            await select_lever(pilot, "option_b")
            detail = " ".join(app.main.query_one("#detail-view").plain.split())
            assert f"({wa}: decision 1)" in detail and "5.3x in A's numbers" in detail, detail
            assert not app.main.query_one("#status").text.startswith("sync:")

    asyncio.run(go())
    mine = team.records("B")
    assert ("decisions", wa, 1) in mine, sorted(mine)
    assert team.writer("B").startswith("B-")
    # pushed too, as the CLI's sync does: A gets B's plan mark at its next sync
    team.optseq("A", "sync")
    assert any(k[1] == team.writer("B") for k in team.records("A")), sorted(team.records("A"))


def test_a_sync_without_a_remote_is_one_line_and_changes_nothing(tmp_path):
    team = Team(tmp_path)
    team.optseq("B", "decide", "option_b", "adopt", "--why", "mine")
    git(team.repo, "remote", "remove", "origin")
    before = team.files("B")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            await pilot.press("S")
            await app.workers.wait_for_complete()
            await pilot.pause()
            refused = [m for m in _messages(app) if m.startswith("sync with origin refused: ")]
            assert len(refused) == 1 and "\n" not in refused[0] and "origin" in refused[0], _messages(app)
            assert not app.main.query_one("#status").text.startswith("sync:")

    asyncio.run(go())
    assert team.files("B") == before


def _second_remote(team: Team) -> Path:
    """A second bare remote of the plan's repository, named `team`: what a store may sync with instead of origin."""
    other = team.root / "team.git"
    git(team.root, "init", "--quiet", "--bare", str(other))
    git(team.repo, "remote", "add", "team", f"file://{other}")
    return other


def test_s_syncs_with_the_remote_the_store_last_synced_with(tmp_path, monkeypatch):
    team = Team(tmp_path)
    _second_remote(team)
    team.optseq("A", "decide", "option_b", "adopt", "--why", "on team")
    team.optseq("A", "sync", "team")
    team.optseq("B", "sync", "team")  # B's last sync names team: its S syncs there, not with origin
    team.optseq("A", "decide", "option_b", "reject", "--why", "later, on team")
    team.optseq("A", "sync", "team")
    wa = team.writer("A")
    monkeypatch.setenv("OPTSEQ_WRITER", "B")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            line = app.main.query_one("#status")
            steps, say = [], line.say
            monkeypatch.setattr(line, "say", lambda step: (steps.append(step), say(step)))
            await pilot.press("S")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert steps[0] == "sync: starting with team (the remote this store last synced with)", steps
            assert any(s == "sync: fetching the writers' refs from team" for s in steps), steps
            said = _messages(app)
            assert any(m.startswith("sync with team done: ") and f"{wa} 1 segment" in m for m in said), said

    asyncio.run(go())
    assert ("decisions", wa, 2) in team.records("B")
    assert git(team.remote, "for-each-ref", "refs/optseq/") == ""  # origin was never asked to hold anything


def test_s_with_a_last_remote_the_plan_repository_no_longer_has_is_one_line(tmp_path):
    team = Team(tmp_path)
    _second_remote(team)
    team.optseq("B", "decide", "option_b", "adopt", "--why", "mine")
    team.optseq("B", "sync", "team")
    git(team.repo, "remote", "remove", "team")
    team.optseq("B", "decide", "option_b", "reject", "--why", "mine, later")
    before = team.files("B")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            await pilot.press("S")
            await app.workers.wait_for_complete()
            await pilot.pause()
            said = _messages(app)
            refused = [m for m in said if m.startswith("sync with team refused: ")]
            assert len(refused) == 1 and "\n" not in refused[0], said
            assert "'team' is not a remote of the plan's repository" in refused[0], refused
            assert not app.main.query_one("#status").text.startswith("sync:")

    asyncio.run(go())
    assert team.files("B") == before


@pytest.mark.slow  # lever runs: every arm a process
def test_runs_names_each_runs_writer_once_a_store_holds_two(tmp_path):
    team = Team(tmp_path)
    (team.repo / "sequencing.toml").write_text(PLAN, encoding="utf-8")
    git(team.repo, "commit", "--quiet", "-am", "the watched plan")
    team.optseq("A", "--run", "fast", "--json")
    team.optseq("B", "--run", "fast", "--json")
    alone = team.optseq("B", "runs", COLUMNS="200").stdout
    assert "writer" not in alone.splitlines()[0], alone
    team.optseq("A", "sync")
    team.optseq("B", "sync")
    table = team.optseq("B", "runs", COLUMNS="200").stdout.splitlines()
    assert "writer" in table[0].split(), table
    wa = team.writer("A")
    assert any(f"{wa} run 1" in line for line in table[1:]), table
    assert any("this store" in line for line in table[1:]), table


@pytest.mark.slow  # lever runs: every arm a process
def test_the_lever_detail_names_the_writer_and_testbed_of_each_number(tmp_path, monkeypatch):
    """Two writers on two testbeds, merged: each run line and each decision's figure in the detail says which
    testbed it came from, and what came from the other writer names it."""
    team = Team(tmp_path)
    (team.repo / "sequencing.toml").write_text(PLAN, encoding="utf-8")
    git(team.repo, "commit", "--quiet", "-am", "the watched plan")
    team.optseq("A", "--run", "fast", "--json", OPTSEQ_TESTBED="box-a")
    team.optseq("B", "--run", "fast", "--json", OPTSEQ_TESTBED="box-b")
    team.optseq("A", "sync", OPTSEQ_TESTBED="box-a")
    team.optseq("B", "sync", OPTSEQ_TESTBED="box-b")
    wa = team.writer("A")
    monkeypatch.setenv("OPTSEQ_TESTBED", "box-b")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            await select_lever(pilot, "fast")
            lines = app.main.query_one("#detail-view").plain.splitlines()
            runs = lines[lines.index("runs") + 1:lines.index("decisions") - 1]
            decided = [l for l in lines[lines.index("decisions") + 1:] if l.startswith("  adopt ")]
            said = "\n".join(lines)
            # each number says its testbed (the store holds two), and what came from A names A's writer and id
            assert len(runs) == 2 and any("  on box-a  " in l and l.endswith(f"({wa}: run 1)") for l in runs), said
            assert any("  on box-b" in l and wa not in l for l in runs), said
            assert any(" on box-a " in l and l.endswith(f"({wa}: decision 1)") for l in decided), said
            assert any(" on box-b " in l and wa not in l for l in decided), said

    asyncio.run(go())


@pytest.mark.slow  # two compares: each measures two commits through the real CLI
def test_the_run_tabs_compares_name_their_writer_and_testbed(tmp_path, monkeypatch):
    """A compare merged from CI's store (another writer, another testbed) beside one made here: the Run tab's list
    names each one's writer and testbed, as `optseq runs` does."""
    from tests.code_repo import GIT_ENV, make_repo
    from tests.conftest import OPTSEQ

    repo = make_repo(tmp_path)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    git(repo.root, "remote", "add", "origin", f"file://{remote}")

    def cli(store: str, *args: str) -> None:
        env = {**{k: v for k, v in os.environ.items() if k not in ("OPTSEQ_PLAN", "OPTSEQ_DB")}, **GIT_ENV,
               "OPTSEQ_WRITER": store, "OPTSEQ_TESTBED": f"box-{store.lower()}"}
        proc = subprocess.run([*OPTSEQ, *args, "--plan", str(repo.root / "optseq.toml"), "--db",
                               str(tmp_path / store)], cwd=repo.root, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    for store in ("CI", "B"):
        cli(store, "compare", "main", "fast")
        cli(store, "sync")
    monkeypatch.setenv("OPTSEQ_TESTBED", "box-b")

    async def go():
        app = make_app(repo.root / "optseq.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.press("3")
            await pilot.pause()
            lines = app.main.query_one("#run-compares").lines()
            wci = next(l for l in lines if "(CI-" in l).split("(", 1)[1].split(" ", 1)[0]
            assert lines[0].startswith(f"compare 2 ({wci} run 1)  fast "), lines
            assert " on box-ci  " in lines[0], lines
            assert lines[1].startswith("compare 1 (this store)  fast ") and " on box-b  " in lines[1], lines

    asyncio.run(go())


def test_the_export_names_the_writer_of_a_decision_made_elsewhere(tmp_path):
    team = Team(tmp_path)
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x in A's numbers")
    team.optseq("A", "sync")
    team.optseq("B", "sync")
    wa = team.writer("A")
    for lang, said in (("en", f"decided by {wa}"), ("ko", f"{wa}의 결정")):
        doc = team.optseq("B", "export", "--lang", lang).stdout
        assert any("Option B" in line and said in line and "5.3x" in line for line in doc.splitlines()), (lang, doc)
    assert "decided by" not in team.optseq("A", "export", "--lang", "en").stdout  # A's own: no writer named
    (line,) = [l for l in team.optseq("B", "runs").stdout.splitlines() if l.startswith("decision")]
    assert f"({wa}: decision 1)" in line, line


def test_s_shows_its_progress_segment_by_segment(tmp_path, monkeypatch):
    """A history of several segments: the status line says each step as the worker reaches it (what a large first
    sync shows instead of a still screen), then the line it had before."""
    team = Team(tmp_path)
    for value in ("true", "false", "true"):
        team.optseq("A", "fact", "eval_dense", value)
    team.optseq("A", "sync", OPTSEQ_TEST_SEGMENT_BYTES="100")
    team.optseq("B", "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    monkeypatch.setenv("OPTSEQ_WRITER", "B")

    async def go():
        app = make_app(team.repo / "sequencing.toml", tmp_path / "B")
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.pause()
            line = app.main.query_one("#status")
            steps, say = [], line.say
            monkeypatch.setattr(line, "say", lambda step: (steps.append(step), say(step)))  # watched, not replaced
            await pilot.press("S")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert steps[0] == "sync: starting with origin (no sync of this store names another)", steps
            assert steps[-1] == "", steps
            assert any(s.startswith("sync: fetching the writers' refs from origin") for s in steps), steps
            merged = [s for s in steps if s.startswith("sync: merging segment")]
            assert len(merged) == 3 and merged[-1].startswith("sync: merging segment 3 of 3"), steps
            assert merged[-1].endswith(": 3 records merged"), steps
            assert not line.text.startswith("sync:"), line.text

    asyncio.run(go())
