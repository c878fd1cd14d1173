"""What `optseq compare` says beside its verdict, through the CLI on tests/code_repo.py's repository: what it does
not measure (the working tree's uncommitted changes), how long it may take and what it cost, and the input it
refuses in one line before any launch (one commit twice, a summary it could not write, an ambiguous short hash,
a shallow clone), with BASE and HEAD called by the CLI's names; a plan for a compare alone, with no levers."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.code_repo import GIT_ENV, CodeRepo, make_repo
from tests.state.code.test_branch_levers import cli

NOT_MEASURED = "compare: uncommitted changes in 1 file are not measured: compare measures commits"


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.slow  # each compare launches its arms as processes
def test_a_compare_says_first_what_it_does_not_measure_and_how_long_it_may_take_and_then_what_it_cost(tmp_path):
    repo = make_repo(tmp_path)  # on main, notes.md changed and not committed
    # a tracked file touched with the same bytes: a `git diff HEAD` would rewrite the index to refresh its stat
    os.utime(repo.root / "bench.py", (1_000_000_000, 1_000_000_000))
    before = repo.snapshot()  # its own `git status` refreshes the index: read after it
    os.utime(repo.root / "bench.py", (1_000_000_000, 1_000_000_000))
    index = (repo.root / ".git" / "index").read_bytes()
    db, summary = tmp_path / "db", tmp_path / "summary.md"
    plan = repo.root / "optseq.toml"

    first = cli(repo, db, "compare", "main", "fast", "--json", "--summary", str(summary))
    said = first.stderr.splitlines()
    launched = next(i for i, line in enumerate(said) if "pair 1 of" in line)
    # said as the compare makes the store (its first record), before any launch, not after the compare
    assert said.index(f"optseq: new store at {db}") < launched and said.count(f"optseq: new store at {db}") == 1, said
    assert said.index(NOT_MEASURED) < launched, said
    assert said.index("compare: no compare of the workload here yet, no length to go by: 10 pairs first, up to 160 "
                      "(320 arm runs) (timeout 1 h)") < launched, said
    data = json.loads(first.stdout)
    cost, pairs = data["cost"], data["summary"]["stats"]["n"]
    # every pair two arm runs, and each pass one warm-up run of each arm before its pairs
    assert cost["pairs"] == pairs and cost["arm_runs"] == 2 * pairs + 2 * cost["passes"] and cost["wall_s"] > 0
    assert data["reproduce"] == f"optseq --plan {plan} compare main fast --tolerance 5%"
    written = summary.read_text(encoding="utf-8")
    assert f"Cost: {pairs} pairs of launches, {cost['arm_runs']} arm runs" in written
    assert f"Reproduce: `optseq --plan {plan} compare main fast --tolerance 5%`" in written

    # the next says the last one's length; neither side is the checked-out commit: nothing of the tree to say
    second = cli(repo, db, "compare", "fast", "same", code=None)
    assert f"compare: the last compare here (run {data['run_id']}) took " in second.stderr
    assert f"for {pairs} pairs; up to " in second.stderr and "if this one needs all 160 (timeout 1 h)" in second.stderr
    assert "uncommitted" not in second.stderr and "new store" not in second.stderr

    assert (repo.root / ".git" / "index").read_bytes() == index  # asked without writing the index
    assert repo.snapshot() == before


def ambiguous_pair(repo: CodeRepo) -> str:
    """Two commits whose ids share their first 4 hex digits, written into the repository: the prefix."""
    tree, head = repo.git("rev-parse", "HEAD^{tree}"), repo.git("rev-parse", "HEAD")
    seen: dict[str, str] = {}
    n = 0
    while True:
        n += 1
        body = (f"tree {tree}\nparent {head}\nauthor t <t@example.com> 1700000000 +0000\n"
                f"committer t <t@example.com> 1700000000 +0000\n\nprobe {n}\n").encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if sha[:4] in seen:
            break
        seen[sha[:4]] = body.decode()
    for text in (seen[sha[:4]], body.decode()):
        proc = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo.root, input=text,
                              capture_output=True, text=True, env={**os.environ, **GIT_ENV}, check=True)
        assert proc.stdout.strip()[:4] == sha[:4]
    return sha[:4]


def test_a_compare_refuses_in_one_line_before_any_launch_what_it_could_not_measure_or_report(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    main, fast = repo.commit("main"), repo.commit("fast")

    # one commit on both sides: nothing to compare, not a run of it against itself
    assert one_line(cli(repo, db, "compare", "main", "main", code=2)) == (
        f"optseq: compare: HEAD main ({main[:7]}) is the same commit as BASE main ({main[:7]}): there is nothing to "
        "compare (compare measures two commits: give BASE and HEAD that differ)")
    assert "is the same commit as BASE fast" in one_line(cli(repo, db, "compare", "fast", fast[:10], code=2))
    assert "is the same commit as BASE main" in one_line(cli(repo, db, "compare", "main", code=2))  # HEAD is main

    # BASE and HEAD by the names the CLI gives them
    assert one_line(cli(repo, db, "compare", "nope", code=2)).startswith("optseq: compare: BASE 'nope' names no commit")
    assert one_line(cli(repo, db, "compare", "main", "nope", code=2)).startswith(
        "optseq: compare: HEAD 'nope' names no commit")
    # an ambiguous short hash is said to be one, with the command that lists what it names
    prefix = ambiguous_pair(repo)
    refused = one_line(cli(repo, db, "compare", "main", prefix, code=2))
    assert refused.startswith(f"optseq: compare: HEAD '{prefix}' is ambiguous in {repo.root}: ") and \
        f"`git rev-parse --disambiguate={prefix}` lists them" in refused, refused

    # a summary the verdict could not be written to is refused before the compare, not after it
    folder = tmp_path / "reports"
    folder.mkdir()
    for args, env, said in (
            (("--summary", "."), {}, "--summary .: it is a folder"),
            (("--summary", str(folder)), {}, f"--summary {folder}: it is a folder"),
            (("--summary", str(tmp_path / "no" / "s.md")), {}, f"its folder {tmp_path / 'no'} does not exist"),
            ((), {"GITHUB_STEP_SUMMARY": str(folder)}, f"$GITHUB_STEP_SUMMARY {folder}: it is a folder"),
            ((), {"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "s.md")}, "$GITHUB_STEP_SUMMARY"),
            ((), {"GITHUB_STEP_SUMMARY": _read_only(tmp_path)}, "cannot be written")):
        refused = one_line(cli(repo, db, "compare", "main", "fast", *args, code=2, env=env))
        assert refused.startswith("optseq: ") and said in refused, (args, env, refused)
    assert not (db / "journal" / "runs.jsonl").exists()  # nothing was launched or recorded

    # a shallow clone (a CI checkout's default) lacks the BASE: the error says how to fetch its history
    shallow = CodeRepo(tmp_path / "shallow")
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", f"file://{repo.root}", str(shallow.root)],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    refused = one_line(cli(shallow, tmp_path / "db2", "compare", "origin/fast", code=2))
    assert refused.startswith(f"optseq: compare: BASE 'origin/fast' names no commit in {shallow.root}, a shallow "
                              "clone") and "`git fetch --unshallow`" in refused and "`fetch-depth: 0`" in refused


def _read_only(tmp_path: Path) -> str:
    """A file this user cannot append to: read-only by its mode, or, for root (whom no mode stops), one the
    kernel refuses writes to."""
    if os.geteuid() == 0:
        return "/proc/version"
    path = tmp_path / "read-only.md"
    path.write_text("", encoding="utf-8")
    path.chmod(0o444)
    return str(path)


@pytest.mark.slow
def test_a_plan_for_compare_alone_declares_its_workload_and_no_levers(tmp_path):
    repo = make_repo(tmp_path)
    text = (repo.root / "optseq.toml").read_text(encoding="utf-8")
    gate = repo.root / "gate.toml"
    gate.write_text(text[:text.index("[[levers]]")], encoding="utf-8")
    db = tmp_path / "db"
    assert cli(repo, db, "validate", plan=gate).stdout.startswith(f"{gate}: ok (0 levers")
    ok = cli(repo, db, "compare", "main", "fast", "--json", plan=gate)
    assert json.loads(ok.stdout)["verdict"] == "not slower"
    assert json.loads(ok.stdout)["reproduce"] == f"optseq --plan {gate} compare main fast --tolerance 5%"
    said = cli(repo, db, "status", plan=gate).stdout.splitlines()
    assert said[1] == ("no levers: the plan declares its [workload] only, what `optseq compare BASE HEAD` measures "
                       "(`optseq runs` lists the compares)"), said
    assert json.loads(cli(repo, db, "status", "--json", plan=gate).stdout)["levers"] == []
    assert "not slower" in cli(repo, db, "runs", plan=gate).stdout
    # a plan with neither is still refused
    gate.write_text(text[:text.index("[workload]")], encoding="utf-8")
    assert "levers: missing" in cli(repo, db, "validate", plan=gate, code=2).stderr


SHAPED = '''import os
pass_no, pair = int(os.environ.get("OPTSEQ_PASS") or 0), os.environ.get("OPTSEQ_PAIR", "")
above = not pair.isdigit() or int(pair) % 10 < 6  # 6 pairs of every 10 on the fast side
factor = {factors}[0 if above else 1]
print(f"rate: {{100 * factor * (1 + 1e-6 * (100 * pass_no + int(pair or 0) if pair.isdigit() else 0)):.9g}} items/s")
'''


@pytest.mark.slow
def test_the_inconclusive_hint_follows_the_ratio_measured_not_only_the_pairs_on_either_side(tmp_path):
    repo = make_repo(tmp_path, plan_extra="[compare]\nrepeats = 10\nmax_repeats = 20\n", dirty=False)
    for branch, factors in (("flat", (1.0, 1.0)), ("near", (1.04, 0.8)), ("far", (1.3, 0.8))):
        repo.git("branch", branch)
        repo.commit_on(branch, "bench.py", SHAPED.format(factors=factors), f"{branch} bench")
    db = tmp_path / "db"
    said = {}
    for head in ("near", "far"):
        data = json.loads(cli(repo, db, "compare", "flat", head, "--json", code=8).stdout)
        stats = data["summary"]["stats"]
        # as many pairs above the 0.952x threshold and below it in both: 12 of 20 at 1.04x or at 1.3x
        assert (stats["above"], stats["below"]) == (12, 8) and data["verdict"] == "inconclusive", data
        found = re.search(r"about (\d+) more pairs", data["reason"])
        said[head] = int(found.group(1)) if found else None
    assert said["far"] is not None and (said["near"] is None or said["far"] < said["near"]), said  # one figure before
