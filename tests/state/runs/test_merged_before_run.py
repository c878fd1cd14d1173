"""A branch lever whose branch was merged into the baseline before the lever ever ran (issue 38, point 8): nothing of
it is left to measure, so it is not ready and never `next`; `status` says why and what to do, `--run next` and
`--run ready` run the real next or say there is nothing to run (exit 3) without naming it. Through the real CLI, on
tests/code_repo.py's repository."""
from __future__ import annotations

import json

import pytest

from optseq.state.store.store import Store
from tests.code_repo import make_repo
from tests.state.code.test_branch_levers import cli


@pytest.mark.slow  # `--run next` measures the real next: every arm a process
def test_a_branch_merged_before_its_lever_ran_is_never_next(tmp_path):
    repo = make_repo(tmp_path)
    repo.git("merge", "--quiet", "--no-edit", "fast")  # a fast-forward: main is fast's commit now
    fast = repo.commit("fast")[:7]
    reason = f"merged before it ran: candidate fast ({fast}) is in main's history"
    db = tmp_path / "db"
    Store.open(db, mode="write").close()

    st = json.loads(cli(repo, db, "status", "--json").stdout)
    view = {v["id"]: v for v in st["levers"]}["fast"]
    assert (view["state"], view["why_blocked"], view["note"]) == ("blocked", [reason], reason)
    assert st["next"] == "same"  # the real next: fast (infra) came first in kind order
    assert f"fast: {reason}: decide it by hand (optseq decide fast adopt|reject --why …) or point its " \
           "candidate_ref at another ref" in st["todo"]
    text = cli(repo, db, "status").stdout
    assert "next: same" in text and "next: fast" not in text
    doc = cli(repo, db, "export", "--lang", "en").stdout
    assert f"| fast path | branch fast | blocked: {reason} |" in doc and "ready (next)" in doc.split("| same")[1]

    # by name: refused in its one line, exit 3 (there is nothing of it to measure), nothing recorded
    by_name = cli(repo, db, "--run", "fast", code=3)
    assert by_name.stderr.splitlines() == [f"optseq: fast cannot run: {reason}"]

    ran = json.loads(cli(repo, db, "--run", "next", "--json").stdout)
    assert [r["lever"] for r in ran["runs"]] == ["same"] and ran["next"] is None

    # now nothing can run: --run next and --run ready say so, exit 3, and name no lever as next
    for target in ("next", "ready"):
        refused = cli(repo, db, "--run", target, code=3)
        assert refused.stderr.splitlines()[0].startswith(f"optseq: nothing to run for '{target}'"), refused.stderr
        assert len(refused.stderr.splitlines()) == 1 and "next: fast" not in refused.stdout + refused.stderr
        assert json.loads(cli(repo, db, "--run", target, "--json", code=3).stdout)["next"] is None
    assert [r["lever"] for r in json.loads(cli(repo, db, "runs", "--json").stdout)["runs"]] == ["same"]

    # decided by hand, as the to-do says: adopted, and in the code already
    cli(repo, db, "decide", "fast", "adopt", "--why", "measured in its pull request")
    view = {v["id"]: v for v in json.loads(cli(repo, db, "status", "--json").stdout)["levers"]}["fast"]
    assert view["state"] == "adopted" and view["branch"]["state"] == "landed"
