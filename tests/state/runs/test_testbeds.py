"""Every number names the testbed it was measured on (issue 39, point 2): a run records {id, name, parts}; `runs`,
`status` and `doctor` say it; a run on another testbed than the plan's `[testbed] decides` decides nothing; a device
that differs on another testbed stales nothing here; the watch re-checks a gain only on the testbed it was adopted
on and refuses elsewhere in one line. Through the real CLI on one store, OPTSEQ_TESTBED switched between runs as a
laptop and a GPU box sharing a store would."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.state.lifecycle.test_lifecycle import ADOPT, OTHER_DEVICE, lever_block, write_plan
from tests.state.lifecycle.test_watch import PLAN as WATCH_PLAN


def cli(plan: Path, db: Path, *args: str, testbed: str | None = None, code: int | None = 0):
    env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_TESTBED", "OPTSEQ_DB", "OPTSEQ_PLAN", "GAIN")}
    if testbed is not None:
        env["OPTSEQ_TESTBED"] = testbed
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], capture_output=True, text=True,
                          timeout=600, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert code is None or proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def run(plan: Path, db: Path, lever: str, testbed: str | None, code: int = 0) -> dict:
    return json.loads(cli(plan, db, "--run", lever, "--json", testbed=testbed, code=code).stdout)["runs"][0]


def levers(plan: Path, db: Path, testbed: str | None = None) -> dict:
    return {v["id"]: v for v in json.loads(cli(plan, db, "status", "--json", testbed=testbed).stdout)["levers"]}


def test_every_run_records_its_testbed_and_the_views_name_it_once_two_appear(tmp_path):
    """runs (its --json and its table), status, doctor and the export."""
    plan = write_plan(tmp_path / "plan.toml", lever_block("fast"), lever_block("other"))
    db = tmp_path / "db"
    # the default testbed: the machine's fingerprint, its parts in the open (doctor names them)
    first = run(plan, db, "fast", None)
    (record,) = json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]
    testbed = record["testbed"]
    assert testbed["name"] == testbed["id"] and testbed["id"].startswith(testbed["parts"]["host"] + "-")
    assert set(testbed["parts"]) >= {"host", "cpu", "os"} and " × " in testbed["parts"]["cpu"]
    parts = " · ".join(testbed["parts"][k] for k in ("host", "cpu", "gpu", "os") if k in testbed["parts"])
    assert f"testbed here: {testbed['id']} ({parts})" in cli(plan, db, "doctor").stdout.splitlines()
    # one machine's store: no testbed column, no testbed line in status
    assert "testbed" not in cli(plan, db, "runs").stdout.splitlines()[0]
    assert "testbed" not in cli(plan, db, "status").stdout

    second = run(plan, db, "other", "laptop")
    history = json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]
    assert [(r["id"], r["testbed"]["name"]) for r in history] == [(first["run_id"], testbed["id"]),
                                                                  (second["run_id"], "laptop")]
    assert history[1]["testbed"]["id"] == testbed["id"]  # the same machine, named otherwise
    table = cli(plan, db, "runs").stdout.splitlines()
    assert table[0].split()[:3] == ["run", "lever", "testbed"], table[0]
    assert table[1].split()[:3] == [str(first["run_id"]), "fast", testbed["id"]]
    assert table[2].split()[:3] == [str(second["run_id"]), "other", "laptop"]
    status = cli(plan, db, "status", testbed="laptop").stdout.splitlines()
    seen = ", ".join(sorted([testbed["id"], "laptop"]))
    assert status[1] == f"testbed: laptop ({testbed['id']}: {parts}); runs from {seen}"
    found = levers(plan, db)
    assert (found["fast"]["testbed"], found["other"]["testbed"]) == (testbed["id"], "laptop")
    assert found["other"]["note"] == "measured on laptop"
    doc = cli(plan, db, "export", "--lang", "en").stdout
    assert f", measured on {testbed['id']}, auto)" in doc and ", measured on laptop, auto)" in doc
    assert ", laptop에서 측정, 자동" in cli(plan, db, "export", "--lang", "ko").stdout


def test_a_run_on_another_testbed_than_the_plans_decides_nothing(tmp_path):
    plan = write_plan(tmp_path / "plan.toml", '[testbed]\ndecides = "gpu-box"\n', lever_block("fast"))
    db = tmp_path / "db"
    elsewhere = run(plan, db, "fast", "laptop")
    assert (elsewhere["status"], elsewhere["verdict"], elsewhere["decision"]) == ("succeeded", "adopt", None)
    said = "measured on laptop, not the plan's testbed gpu-box, so it decides nothing"
    assert said in elsewhere["message"]
    fast = levers(plan, db, "laptop")["fast"]
    assert (fast["state"], fast["outcome"]) == ("ready", None)
    assert fast["note"] == f"run {elsewhere['run_id']} {said}"
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"] == []
    status = cli(plan, db, "status", testbed="laptop").stdout.splitlines()
    assert status[1].startswith("testbed: laptop (") and status[1].endswith(
        "; the plan's numbers are gpu-box's: runs here decide nothing; runs from laptop"), status[1]

    # the plan's testbed decides, and the same store read again agrees (the records replayed, not a snapshot)
    there = run(plan, db, "fast", "gpu-box")
    assert there["decision"] == "adopt"
    fast = levers(plan, db, "gpu-box")["fast"]
    assert (fast["state"], fast["testbed"]) == ("adopted", "gpu-box")
    (db / "levers.json").unlink(missing_ok=True)
    assert levers(plan, db, "laptop")["fast"]["state"] == "adopted"


def test_a_device_that_differs_on_another_testbed_stales_nothing_here(tmp_path):
    other = tmp_path / "other_device.py"
    other.write_text(OTHER_DEVICE, encoding="utf-8")
    plan = write_plan(tmp_path / "plan.toml", lever_block("fast"),
                      lever_block("there", script=other, args=[]), lever_block("here", script=other, args=[]))
    db = tmp_path / "db"
    assert run(plan, db, "fast", "gpu-box")["decision"] == "adopt"  # measured on test-device
    # the laptop's runs report another device: its numbers are its own, the GPU box's stay as they are
    run(plan, db, "there", "laptop")
    fast = levers(plan, db, "gpu-box")["fast"]
    assert (fast["state"], fast["stale_reason"]) == ("adopted", None)
    # on the GPU box itself another device is a change of its stack: stale, as before testbeds
    run(plan, db, "here", "gpu-box")
    fast = levers(plan, db, "gpu-box")["fast"]
    assert fast["state"] == "stale" and fast["stale_reason"].startswith("device changed"), fast


def test_the_plans_testbed_section_and_the_environment_are_checked_in_one_line(tmp_path):
    db = tmp_path / "db"
    bad = write_plan(tmp_path / "bad.toml", '[testbed]\ndecides = "gpu box"\n', lever_block("fast"))
    proc = cli(bad, db, "validate", code=2)
    assert proc.stderr.strip().splitlines() == [f"optseq: {bad}: testbed.decides: 'gpu box' is not a testbed name "
                                                "(letters, digits, '.', '_' and '-', at most 64, starting with a "
                                                "letter or digit) (line 7)"]
    unknown = write_plan(tmp_path / "unknown.toml", '[testbed]\nmachine = "x"\n', lever_block("fast"))
    assert "testbed.machine: unknown key" in cli(unknown, db, "validate", code=2).stderr
    plan = write_plan(tmp_path / "plan.toml", '[testbed]\nname = "workstation"\n', lever_block("fast"))
    proc = cli(plan, db, "--run", "fast", testbed="a b", code=2)
    assert proc.stderr.splitlines() == ["optseq: OPTSEQ_TESTBED: 'a b' is not a testbed name (letters, digits, "
                                        "'.', '_' and '-', at most 64, starting with a letter or digit)"]
    assert not (db / "runs").exists() or json.loads(cli(plan, db, "runs", "--json").stdout)["runs"] == []
    # the plan's name, unless the environment names another
    run(plan, db, "fast", None)
    run(plan, db, "fast", "ci-runner")
    assert [r["testbed"]["name"] for r in json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]] == [
        "workstation", "ci-runner"]


@pytest.mark.slow  # lever runs: every arm a process
def test_the_watch_refuses_in_one_line_to_recheck_a_gain_adopted_on_another_testbed(tmp_path):
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(WATCH_PLAN, encoding="utf-8")
    assert run(plan, db, "fast", "gpu-box")["decision"] == "adopt"
    proc = cli(plan, db, "--run", "watch", testbed="laptop", code=3)
    assert proc.stderr.splitlines() == ["optseq: watch: fast was adopted on gpu-box; this is laptop: its gain is "
                                        "re-checked only on gpu-box (OPTSEQ_TESTBED=gpu-box there)"]
    assert len(json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]) == 1  # nothing measured
    # on its own testbed the watch re-checks it
    watched = json.loads(cli(plan, db, "--run", "watch", "--json", testbed="gpu-box").stdout)["runs"]
    assert [(r["lever"], r["verdict"]) for r in watched] == [("fast", "holds")]


@pytest.mark.slow  # a compare launches every arm as a process
def test_a_compare_records_the_testbed_it_measured_both_commits_on(tmp_path):
    from tests.code_repo import make_repo
    from tests.state.code.test_branch_levers import cli as repo_cli

    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    repo.commit("main"), repo.commit("fast")
    assert json.loads(repo_cli(repo, db, "--run", "fast", "--json", env={"OPTSEQ_TESTBED": "gpu-box"}).stdout)[
        "runs"][0]["decision"] == "adopt"
    repo_cli(repo, db, "compare", "main", "fast", env={"OPTSEQ_TESTBED": "ci-runner"})
    runs = json.loads(repo_cli(repo, db, "runs", "--json").stdout)["runs"]
    assert [(r.get("kind"), r["testbed"]["name"]) for r in runs] == [(None, "gpu-box"), ("compare", "ci-runner")]
    rows = repo_cli(repo, db, "runs").stdout.splitlines()
    assert rows[0].split()[:3] == ["run", "lever", "testbed"] and rows[2].split()[1:3] == ["compare", "ci-runner"]
    refused = repo_cli(repo, db, "compare", "main", "fast", env={"OPTSEQ_TESTBED": "-x"}, code=2)
    assert refused.stderr.splitlines()[-1].startswith("optseq: OPTSEQ_TESTBED: '-x' is not a testbed name")
    assert len(json.loads(repo_cli(repo, db, "runs", "--json").stdout)["runs"]) == 2  # nothing recorded


BY_TESTBED = """import os, runpy, sys
# the stand-in A/B bench, slower on the laptop than on the GPU box (two machines' levels, not a change) and
# anywhere once the file named by its second argument exists (a change)
slow = os.environ.get("OPTSEQ_TESTBED") == "laptop" or os.path.exists(sys.argv[2])
sys.argv = [sys.argv[1], "--ratio", "1.25" if slow else "1.5"]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow  # nine lever runs
def test_change_points_run_over_one_testbeds_runs(tmp_path):
    from tests.state.lifecycle.test_lifecycle import AB

    bench, slower = tmp_path / "by_testbed.py", tmp_path / "slower"
    bench.write_text(BY_TESTBED, encoding="utf-8")
    plan = write_plan(tmp_path / "plan.toml", lever_block("fast", script=bench, args=[str(AB), str(slower)]))
    db = tmp_path / "db"
    for testbed in ("gpu-box",) * 3 + ("laptop",) * 3:
        run(plan, db, "fast", testbed)
    listed = cli(plan, db, "runs", "fast").stdout
    assert "laptop" in listed and "change at run" not in listed, listed
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["changes"] == []  # runs --json splits them too
    # the same fall on one testbed is a change, found in that testbed's runs alone
    slower.write_text("", encoding="utf-8")
    for _ in range(3):
        run(plan, db, "fast", "gpu-box")
    changes = [line for line in cli(plan, db, "runs", "fast").stdout.splitlines() if line.startswith("change at")]
    assert len(changes) == 1 and changes[0].startswith("change at run 7: 1.5") and "→ 1.2" in changes[0], changes
    assert [c["text"] for c in json.loads(cli(plan, db, "runs", "--json").stdout)["changes"]] == changes
