"""`optseq sync` through the real CLI: stores that share one history through a real bare repository (issue 39,
points 1 and 5)."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.state.sync.syncing import Team, git


@pytest.fixture
def team(tmp_path):
    return Team(tmp_path)


def julia(team: Team, store: str) -> dict:
    status = json.loads(team.optseq(store, "status", "--json").stdout)
    return next(l for l in status["levers"] if l["id"] == "julia_port")


def test_a_criterion_recorded_in_a_decides_the_gate_in_b(team):
    index = team.repo / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes(), git(team.repo, "for-each-ref"))
    team.optseq("B", "sync")  # B first: an empty store, nothing yet on the remote
    assert julia(team, "B")["state"] != "decided"
    team.optseq("A", "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "criterion 4 missed")
    said = team.optseq("A", "sync").stdout
    assert re.match(r"pushed 1 segment \(\d+ records\) to refs/optseq/writers/A-[0-9a-f]{8}; nothing new", said), said
    said = team.optseq("B", "sync").stdout
    assert f"fetched 1 writer: {team.writer('A')} 1 segment" in said, said
    assert julia(team, "B")["state"] == "decided" and julia(team, "B")["outcome"] == "NO-GO"
    assert "julia_port  decided    NO-GO" in team.optseq("B", "status").stdout
    # the user's repository: its index, refs and working tree as they were; the refs live on the remote
    assert (index.stat().st_mtime_ns, index.read_bytes(), git(team.repo, "for-each-ref")) == before
    assert git(team.repo, "status", "--porcelain") == ""
    assert git(team.remote, "for-each-ref", "--format=%(refname)", "refs/optseq/").split() == sorted(
        f"refs/optseq/writers/{team.writer(s)}" for s in ("A",))
    # a second sync of each imports nothing twice
    assert "nothing new to push" in team.optseq("B", "sync").stdout
    assert "nothing new from other writers" in team.optseq("A", "sync").stdout
    assert team.records("A").keys() == team.records("B").keys()


def test_concurrent_decisions_are_a_conflict_until_someone_decides_again(team):
    for store in ("A", "B"):
        team.optseq(store, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x in A's numbers")
    team.optseq("B", "decide", "option_b", "reject", "--why", "B measured no gain")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    wa, wb = team.writer("A"), team.writer("B")
    held = set()
    for store in ("A", "B"):
        status = json.loads(team.optseq(store, "status", "--json").stdout)
        (c,) = status["conflicts"]
        assert c["lever"] == "option_b"
        assert {(d["writer"], d["outcome"], d["why"]) for d in (c["holds"], c["other"])} == {
            (wa, "adopt", "5.3x in A's numbers"), (wb, "reject", "B measured no gain")}
        lever = next(l for l in status["levers"] if l["id"] == "option_b")
        assert lever["outcome"] == c["holds"]["outcome"]
        # every store holds the same one, the later by its writer's clock (then by writer id), whichever order
        # the syncs brought them in: A imported B's reject, B imported A's adopt
        assert (c["holds"]["at"], c["holds"]["writer"]) > (c["other"]["at"], c["other"]["writer"])
        held.add((c["holds"]["writer"], c["holds"]["outcome"]))
        text = team.optseq(store, "status").stdout
        assert f"conflict: option_b was decided concurrently" in text and wa in text and wb in text, text
        assert "B measured no gain" in text and "5.3x in A's numbers" in text
    assert len(held) == 1, held
    # A decides again having seen both: no conflict anywhere once it is shared
    team.optseq("A", "decide", "option_b", "adopt", "--why", "A's numbers reproduced on B's box")
    for store in ("A", "B"):
        team.optseq(store, "sync")
        assert "conflicts" not in json.loads(team.optseq(store, "status", "--json").stdout)
    # a decision made after seeing the other's, synced later, is no conflict either
    team.optseq("B", "decide", "option_b", "reject", "--why", "B overrules, having read A's")
    team.optseq("B", "sync")
    team.optseq("A", "sync")
    assert "conflicts" not in json.loads(team.optseq("A", "status", "--json").stdout)


def test_a_remote_that_names_nothing_is_one_line_exit_2(team, tmp_path):
    (tmp_path / "not-a-repo").mkdir()
    for remote, said in ((str(tmp_path / "nowhere"), "no such path"),
                         (str(tmp_path / "not-a-repo"), "not a git repository"),
                         ("upstream", "not a remote of the plan's repository")):
        proc = team.optseq("A", "sync", remote, code=2)
        assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert not (team.root / "A").exists()  # refused: no store made
    team.optseq("A", "fact", "eval_dense", "true")
    before = team.files("A")
    proc = team.optseq("A", "sync", str(tmp_path / "not-a-repo"), code=2)
    assert "not a git repository" in proc.stderr and team.files("A") == before


def test_a_remote_that_refuses_the_push(team):
    hook = team.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    team.optseq("B", "fact", "eval_dense", "true")
    team.optseq("B", "sync", code=4)  # refused too: B's records reach A only once the remote takes them
    team.optseq("A", "record", "julia_port", "torch_jl", "c4", "pass")
    before = team.files("A")
    proc = team.optseq("A", "sync", code=4)
    assert len(proc.stderr.splitlines()) == 1 and "remote origin refused the push" in proc.stderr, proc.stderr
    assert "pre-receive hook declined" in proc.stderr and "what was fetched is merged" in proc.stderr
    assert team.files("A") == before  # nothing of A's lost or changed
    assert json.loads(team.optseq("A", "status", "--json").stdout)["sync"]["records"] >= 1  # still waiting
    hook.unlink()
    team.optseq("A", "sync")
    team.optseq("B", "sync")
    team.optseq("A", "sync")
    assert team.records("A").keys() == team.records("B").keys()
    assert any(k[0] == "facts" for k in team.records("A"))


def _segment_commit(team: Team, ref: str, segment: bytes, manifest: bytes | None = None) -> None:
    """A new commit on `ref` in the remote holding `segment` beside the tip's manifest (or `manifest`)."""
    tip = git(team.remote, "rev-parse", ref)

    def blob(data: bytes) -> str:
        return subprocess.run(["git", "-C", str(team.remote), "hash-object", "-w", "--stdin"], input=data,
                              capture_output=True, check=True).stdout.decode().strip()

    man = blob(manifest) if manifest is not None else git(team.remote, "rev-parse", f"{tip}:manifest.json")
    tree = subprocess.run(["git", "-C", str(team.remote), "mktree"], capture_output=True, check=True, text=True,
                          input=f"100644 blob {man}\tmanifest.json\n100644 blob {blob(segment)}\tsegment.jsonl\n"
                          ).stdout.strip()
    commit = git(team.remote, "commit-tree", tree, "-p", tip, "-m", "edited by hand")
    git(team.remote, "update-ref", ref, commit)


@pytest.mark.parametrize("edit", ["bytes", "shape"])
def test_a_segment_edited_by_hand_is_refused_naming_it(team, edit):
    import hashlib

    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("A", "sync")  # segment 1: sound, but B must import nothing of A's once segment 2 is refused
    team.optseq("A", "fact", "eval_dense", "false")
    team.optseq("A", "sync")
    ref = f"refs/optseq/writers/{team.writer('A')}"
    tip = git(team.remote, "rev-parse", ref)
    segment = subprocess.run(["git", "-C", str(team.remote), "cat-file", "blob", f"{tip}:segment.jsonl"],
                             capture_output=True, check=True).stdout
    manifest = json.loads(git(team.remote, "cat-file", "blob", f"{tip}:manifest.json"))
    manifest["n"] = 3
    if edit == "bytes":  # a changed segment under the old manifest
        _segment_commit(team, ref, segment.replace(b"false", b"true "), json.dumps(manifest).encode())
        said = "do not match the sha256"
    else:  # a right checksum over a record of the wrong shape
        bad = segment.replace(b'"value":false', b'"value":"no"')
        assert bad != segment
        manifest["sha256"] = hashlib.sha256(bad).hexdigest()
        _segment_commit(team, ref, bad, json.dumps(manifest).encode())
        said = "field `r.value`"
    team.optseq("B", "fact", "eval_dense", "true")
    before = team.files("B")
    proc = team.optseq("B", "sync", code=4)
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"writer {team.writer('A')}'s segment 3" in proc.stderr and said in proc.stderr, proc.stderr
    if edit == "shape":
        assert "line 1: record 2 of facts" in proc.stderr, proc.stderr
    assert team.files("B") == before  # segments 1 and 2 were sound: nothing of them either
    assert not any(k[1] == team.writer("A") for k in team.records("B"))


def test_a_writers_ref_rewritten_by_someone_is_refused_naming_it(team):
    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("A", "sync")
    team.optseq("A", "fact", "eval_dense", "false")
    team.optseq("A", "sync")
    team.optseq("B", "sync")
    got = team.records("B")
    ref = f"refs/optseq/writers/{team.writer('A')}"
    first = git(team.remote, "rev-parse", f"{ref}~1")
    git(team.remote, "update-ref", ref, first)  # someone force-pushed it back one segment, and on from there
    team.optseq("C", "fact", "eval_dense", "true")
    git(team.remote, "update-ref", ref, git(team.remote, "commit-tree", f"{first}^{{tree}}", "-p", first, "-m", "x"))
    before = team.files("B")
    proc = team.optseq("B", "sync", code=4)
    assert f"writer {team.writer('A')}'s ref was rewritten by someone" in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert team.files("B") == before and team.records("B").keys() == got.keys()
    # and the writer whose ref it is refuses to build on it
    proc = team.optseq("A", "sync", code=4)
    assert "this store's own ref" in proc.stderr and "rewritten" in proc.stderr, proc.stderr


def test_sync_from_a_shallow_clone(team, tmp_path):
    team.optseq("A", "record", "julia_port", "torch_jl", "c4", "fail")
    team.optseq("A", "sync")
    (team.repo / "notes.md").write_text("a second commit, so that a clone of depth 1 lacks history\n")
    git(team.repo, "add", "notes.md")
    git(team.repo, "commit", "--quiet", "-m", "notes")
    git(team.repo, "push", "--quiet", "origin", "main")
    clone = tmp_path / "ci"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "main", f"file://{team.remote}", str(clone)],
                   check=True)
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    env_store = "CI"
    proc = team.optseq(env_store, "sync", cwd=clone, OPTSEQ_PLAN=str(clone / "sequencing.toml"))
    assert f"fetched 1 writer: {team.writer('A')}" in proc.stdout, proc.stdout
    assert proc.stderr == f"optseq: new store at {team.root / env_store}\n"
    assert git(clone, "for-each-ref", "--format=%(refname)", "refs/optseq/") == ""  # the clone's refs untouched
    status = json.loads(team.optseq(env_store, "status", "--json", OPTSEQ_PLAN=str(clone / "sequencing.toml")).stdout)
    assert next(l for l in status["levers"] if l["id"] == "julia_port")["state"] == "decided"


def test_a_sync_reaches_the_remote_as_the_plan_repository_does(team, tmp_path):
    """A checkout whose own `.git/config` says how to reach its remote (here an ssh command, as a deploy key's; on
    GitHub Actions the auth header `actions/checkout` writes): the sync's private repository borrows it, for the
    fetch and the push, and writes nothing of it anywhere."""
    ssh = tmp_path / "local-ssh"
    ssh.write_text('#!/bin/sh\n# ssh HOST COMMAND, served here: the command is the last argument\n'
                   'for last; do :; done\nexec sh -c "$last"\n')
    ssh.chmod(0o755)
    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("A", "sync")
    clone = tmp_path / "ci"
    subprocess.run(["git", "clone", "--quiet", "--branch", "main", f"file://{team.remote}", str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", f"ssh://teamhost{team.remote}")
    git(clone, "config", "--local", "core.sshCommand", str(ssh))
    plan = {"OPTSEQ_PLAN": str(clone / "sequencing.toml")}
    team.optseq("CI", "fact", "eval_dense", "false", cwd=clone, **plan)
    said = team.optseq("CI", "sync", cwd=clone, **plan).stdout
    assert said.startswith("pushed 1 segment") and f"fetched 1 writer: {team.writer('A')}" in said, said
    assert "sshcommand" not in (team.root / "CI" / "sync.git" / "config").read_text().lower()
    assert f"{team.writer('CI')} 1 segment" in team.optseq("A", "sync").stdout


def test_a_store_named_by_a_relative_path(team):
    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("A", "sync")
    proc = team.optseq("R", "sync", cwd=team.root, OPTSEQ_DB="R")
    assert f"fetched 1 writer: {team.writer('A')}" in proc.stdout, proc.stderr
    assert (team.root / "R" / "sync.git" / "HEAD").is_file()


def test_a_store_whose_hot_file_was_rebuilt_imports_and_pushes_nothing_twice(team):
    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("B", "record", "julia_port", "torch_jl", "c4", "fail")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    writer = team.writer("B")
    (team.root / "B" / "optseq.json").unlink()
    assert "rebuilt" in team.optseq("B", "doctor", "--rebuild").stdout
    team.optseq("A", "fact", "eval_dense", "false")
    team.optseq("A", "sync")
    said = team.optseq("B", "sync").stdout
    assert said.startswith(f"nothing new to push (refs/optseq/writers/{writer})"), said
    assert f"{team.writer('A')} 1 segment" in said, said
    team.optseq("A", "sync")
    assert team.records("A").keys() == team.records("B").keys()  # and each once (Team.records asserts)


def test_a_store_that_lost_its_sync_repository_and_hot_file_keeps_its_writer(team):
    """`.optseq/sync.git` and `optseq.json` both gone, the hot file rebuilt from the journals: the writer's name is
    found in them, so the store neither becomes a new writer nor pushes or imports its old records again."""
    import shutil

    team.optseq("A", "fact", "eval_dense", "true")
    team.optseq("B", "record", "julia_port", "torch_jl", "c4", "fail")
    team.optseq("B", "decide", "option_b", "adopt", "--why", "B's numbers")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    team.optseq("A", "fact", "eval_dense", "false")  # new in A since B's last sync
    team.optseq("A", "sync")
    writer = team.writer("B")
    refs = git(team.remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/optseq/")
    shutil.rmtree(team.root / "B" / "sync.git")
    (team.root / "B" / "optseq.json").unlink()
    assert "rebuilt" in team.optseq("B", "doctor", "--rebuild").stdout
    said = team.optseq("B", "sync").stdout
    assert said.startswith(f"nothing new to push (refs/optseq/writers/{writer})"), said
    assert f"{team.writer('A')} 1 segment (1 records)" in said, said  # A's new fact alone: the rest was held
    assert team.writer("B") == writer
    assert git(team.remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/optseq/") == refs
    team.optseq("B", "decide", "option_b", "reject", "--why", "B again, after the rebuild")
    team.optseq("B", "sync")
    team.optseq("A", "sync")
    assert team.records("A").keys() == team.records("B").keys()  # and each once (Team.records asserts)
    writers = git(team.remote, "for-each-ref", "--format=%(refname)", "refs/optseq/").split()
    assert sorted(writers) == sorted(f"refs/optseq/writers/{w}" for w in (team.writer("A"), writer)), writers


def test_clocks_days_apart_order_nothing_what_each_had_seen_does(team, tmp_path):
    """A's clock is three days ahead (tests/clock_jump): its decisions' `at` are later than anything B writes."""
    from pathlib import Path

    jumped = tmp_path / "jumped"
    jumped.write_text("")
    ahead = {"PYTHONPATH": str(Path(__file__).parents[2] / "clock_jump"), "OPTSEQ_TEST_CLOCK_JUMP_AT": str(jumped),
             "OPTSEQ_TEST_CLOCK_JUMP_S": str(3 * 86400)}

    def option_b(store):
        status = json.loads(team.optseq(store, "status", "--json").stdout)
        return next(l for l in status["levers"] if l["id"] == "option_b")["outcome"], status.get("conflicts")

    for store in ("A", "B"):
        team.optseq(store, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok", **(ahead if store == "A" else {}))
    team.optseq("A", "decide", "option_b", "adopt", "--why", "A, three days ahead", **ahead)
    team.optseq("A", "sync", **ahead)
    team.optseq("B", "sync")
    team.optseq("B", "decide", "option_b", "reject", "--why", "B, having read A's")  # earlier by the clocks
    team.optseq("B", "sync")
    team.optseq("A", "sync", **ahead)
    decisions = {d["why"]: d for d in json.loads(team.optseq("A", "runs", "--json").stdout)["decisions"]}
    theirs = decisions["B, having read A's"]["origin"]["at"]
    assert theirs < decisions["A, three days ahead"]["at"]  # the clocks say A's came last
    for store in ("A", "B"):
        assert option_b(store) == ("reject", None), store  # what B had seen says B's did
    # decided again by each, neither having seen the other's: a conflict, whatever the clocks say
    team.optseq("A", "decide", "option_b", "adopt", "--why", "A again", **ahead)
    team.optseq("B", "decide", "option_b", "defer", "--why", "B again")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync", **(ahead if store == "A" else {}))
    for store in ("A", "B"):
        outcome, found = option_b(store)
        assert found and {found[0]["holds"]["why"], found[0]["other"]["why"]} == {"A again", "B again"}, store
        # which one holds is the same everywhere: here A's, whose clock is ahead (a clock decides only between two
        # decisions neither writer had seen; deciding again settles it)
        assert found[0]["holds"]["why"] == "A again" and outcome == "adopt", store


def test_status_says_how_far_the_store_is_from_its_last_sync(team):
    team.optseq("A", "fact", "eval_dense", "false")
    assert "sync" not in json.loads(team.optseq("A", "status", "--json").stdout)
    team.optseq("A", "sync")
    said = json.loads(team.optseq("A", "status", "--json").stdout)["sync"]
    assert said["records"] == 0 and said["writer"] == team.writer("A") and str(team.remote) in said["remote"]
    assert "nothing written here since" in team.optseq("A", "status").stdout
    team.optseq("A", "fact", "eval_dense", "true")
    said = json.loads(team.optseq("A", "status", "--json").stdout)["sync"]
    assert said["records"] >= 1
    assert f"written here since (optseq sync shares them)" in team.optseq("A", "status").stdout
    team.optseq("A", "sync")
    assert json.loads(team.optseq("A", "status", "--json").stdout)["sync"]["records"] == 0


def test_a_long_segment_is_split_in_several(team):
    for value in ("true", "false", "true"):
        team.optseq("A", "fact", "eval_dense", value)
    said = team.optseq("A", "sync", OPTSEQ_TEST_SEGMENT_BYTES="100").stdout
    assert said.startswith("pushed 3 segments (3 records)"), said
    assert git(team.remote, "rev-list", "--count", f"refs/optseq/writers/{team.writer('A')}") == "3"
    assert "3 segments (3 records)" in team.optseq("B", "sync").stdout
    assert team.records("A").keys() == team.records("B").keys()


def test_the_export_names_a_conflict(team):
    for store in ("A", "B"):
        team.optseq(store, "plan", "option_b", "docs/plans/option_b.md", "--missing-ok")
    team.optseq("A", "decide", "option_b", "adopt", "--why", "5.3x in A's numbers")
    team.optseq("B", "decide", "option_b", "reject", "--why", "B measured no gain")
    for store in ("A", "B", "A"):
        team.optseq(store, "sync")
    for lang in ("en", "ko"):
        doc = team.optseq("B", "export", "--lang", lang).stdout
        (line,) = [l for l in doc.splitlines() if "option_b:" in l and team.writer("B") in l]
        for said in (team.writer("A"), "adopt", "reject", "5.3x in A's numbers", "B measured no gain"):
            assert said in line, (lang, said, line)
    assert "concurrently" in team.optseq("B", "export", "--lang", "en").stdout
