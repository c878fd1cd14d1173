"""A write refused for bad input makes no store (issue 38, point 9): through the real CLI, with a --db that names no
store yet (a typo), each refusal is its one line, exit 2, and leaves no folder, so the next read of that typo is
refused too instead of showing a fresh plan. A write that is not refused makes the store, and says so once."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.code_repo import make_repo
from tests.console.test_cli_truth import optseq, refused

REFUSED = {
    "decide without --why": (("decide", "option_a", "adopt"), "needs a rationale (--why TEXT)"),
    "decide of an unknown lever": (("decide", "no_such", "adopt", "--why", "x"), "unknown lever 'no_such'"),
    "record of an unknown lever": (("record", "no_such", "flux", "c1", "pass"), "unknown lever 'no_such'"),
    "record of an unknown candidate": (("record", "julia_port", "nope", "c1", "pass"), "unknown candidate 'nope'"),
    "fact unknown": (("fact", "no_such_fact", "true"), "unknown fact 'no_such_fact'"),
    "plan of an unknown lever": (("plan", "no_such", "x.md", "--missing-ok"), "unknown lever 'no_such'"),
    "run of an unknown lever": (("--run", "no_such"), "unknown lever 'no_such'"),
    "landed of a lever with no branch": (("landed", "option_a", "HEAD", "--why", "x"), "not a branch lever"),
}

BRANCH_TYPO = '''
[[levers]]
id = "typo"
title = "a branch that is not there"
kind = "speedup"
rule = { metric = "rate", min_speedup = 1.2 }
[levers.arms]
candidate_ref = "fsat"
'''


def made_nothing(proc, fragment: str, typo: Path, env: dict, *plan: str) -> None:
    refused(proc, fragment)
    assert not typo.exists() and not typo.parent.exists()
    refused(optseq(env, *plan, "--db", str(typo), "status"), f"no store at {typo}")  # the typo stays a typo


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_write_refused_for_bad_input_makes_no_store(cli_env, tmp_path, case):
    args, fragment = REFUSED[case]
    typo = tmp_path / "typo" / "db"
    made_nothing(optseq(cli_env, "--db", str(typo), *args), fragment, typo, cli_env)


def test_a_ref_that_names_nothing_makes_no_store(cli_env, tmp_path):
    repo = make_repo(tmp_path, levers_extra=BRANCH_TYPO)
    plan = ("--plan", str(repo.root / "optseq.toml"))
    typo = tmp_path / "typo" / "db"
    made_nothing(optseq(cli_env, *plan, "--db", str(typo), "--run", "typo"), "candidate_ref 'fsat' names no commit",
                 typo, cli_env, *plan)
    made_nothing(optseq(cli_env, *plan, "--db", str(typo), "compare", "main", "nope"), "'nope' names no commit",
                 typo, cli_env, *plan)
    made_nothing(optseq(cli_env, *plan, "--db", str(typo), "compare", "main", "fast", "--tolerance", "30"),
                 "--tolerance", typo, cli_env, *plan)


def test_a_write_that_is_not_refused_makes_the_store_at_its_first_write(cli_env, tmp_path):
    new = tmp_path / "typo" / "db"
    done = optseq(cli_env, "--db", str(new), "decide", "option_a", "adopt", "--why", "measured elsewhere")
    assert done.returncode == 0 and done.stderr == f"optseq: new store at {new}\n", done.stderr
    assert done.stdout.strip() == "option_a decided adopt (manual)"
    st = optseq(cli_env, "--db", str(new), "status")
    assert st.returncode == 0 and "option_a" in st.stdout and "adopted" in st.stdout.split("option_a", 1)[1][:20]
