"""Levers as changes to one workload: flags and environment compose into the stack, conflicts are refused, and
a metric's direction comes from its unit. Through the CLI, on a stand-in bench configured by --key=value flags."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from optseq.state.plan.loader import load
from optseq.state.plan.model import PlanError
from optseq.state.plan.workload import apply_args, direction_of, flag_key
from tests.conftest import OPTSEQ

BENCH = Path(__file__).parents[1] / "lever_scripts" / "flags_bench.py"


def plan_file(tmp_path: Path, levers: str, workload: str | None = None) -> Path:
    workload = workload if workload is not None else f"""
[workload]
command = ["python", "{BENCH}", "--a=1", "--b=1"]
env = {{ STACKED = "w" }}
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0
"""
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[plan]
title = "Workload"
as_of = 2026-12-01
lang = "en"
{workload}
{levers}
""", encoding="utf-8")
    return path


def lever(lever_id: str, arms: str, extra: str = "") -> str:
    return f"""
[[levers]]
id = "{lever_id}"
title = "{lever_id}"
kind = "speedup"
timeout_s = 120
{extra}
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
[levers.arms]
{arms}
"""


def cli(plan: Path, db: Path, *args: str, code: int | None = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], capture_output=True, text=True,
                          timeout=300)
    assert code is None or proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load(path)
    return str(info.value)


# -- flags ------------------------------------------------------------------------------------------------------

def test_a_flag_of_the_same_key_replaces_the_commands_own():
    cmd = ("python", "b.py", "--a=1", "--n", "5", "--fast", "pos")
    assert apply_args(cmd, ["--a=2"]) == ("python", "b.py", "--a=2", "--n", "5", "--fast", "pos")
    assert apply_args(cmd, ["--n=7"]) == ("python", "b.py", "--a=1", "--n=7", "--fast", "pos")  # a `--n 5` pair
    assert apply_args(cmd, ["--fast"]) == cmd  # already there
    assert apply_args(cmd, ["--new=1", "--z"]) == (*cmd, "--new=1", "--z")
    assert flag_key("--a=2") == "--a" and flag_key("pos") is None and flag_key("-") is None


def test_the_unit_says_which_way_is_better():
    assert direction_of("ms") is False and direction_of("s") is False and direction_of("ms/step") is False
    assert direction_of("samples/s") is True and direction_of("tokens_per_s") is True
    assert direction_of("items/sec") is True and direction_of("tokens") is None and direction_of("") is None


def test_a_direction_the_unit_contradicts_or_cannot_give_is_refused(tmp_path):
    head = '[plan]\ntitle = "x"\nas_of = 2026-12-01\n'
    cmd = f'command = ["python", "{BENCH}"]\ncandidate_args = ["--a=2"]\n'
    ms_true = lever("l", cmd + 'metric = { name = "rate", regex = \'r ([0-9]+)\', unit = "ms", higher_is_better = true }')
    assert "levers.l.arms.metric.higher_is_better: true contradicts unit 'ms' (a time: lower is better)" in \
        refused(tmp_path, head + ms_true)
    bare = lever("l", cmd + 'metric = { name = "rate", regex = \'r ([0-9]+)\', unit = "tokens" }')
    assert "levers.l.arms.metric.higher_is_better: missing: unit 'tokens' does not say which way is better" in \
        refused(tmp_path, head + bare)


def test_bad_changes_are_refused_naming_the_key(tmp_path):
    assert "levers.l.arms.candidate_args[0]: '32' is not a flag" in refused(
        tmp_path, plan_file(tmp_path, lever("l", 'candidate_args = ["32"]')).read_text())
    assert "levers.l.arms.candidate_args[1]: --a is given twice" in refused(
        tmp_path, plan_file(tmp_path, lever("l", 'candidate_args = ["--a=2", "--a=3"]')).read_text())
    assert "levers.l.arms.command: missing (the command for both arms, a [workload]" in refused(
        tmp_path, plan_file(tmp_path, lever("l", 'candidate_args = ["--a=2"]'), workload="").read_text())
    assert "workload.command: missing" in refused(
        tmp_path, plan_file(tmp_path, lever("l", 'candidate_args = ["--a=2"]'), workload="[workload]\ncwd = '.'\n")
        .read_text())


@pytest.mark.slow  # lever runs through the CLI (each arm a python process)
def test_flags_compose_across_two_adopted_levers(tmp_path):
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]')
                     + lever("lb", 'candidate_args = ["--b=2"]\ncandidate_env = { STACKED = "b" }',
                             extra='requires = "la:decided"')
                     + lever("lc", 'candidate_args = ["--b=3"]', extra='requires = "lb:decided"'))
    db = tmp_path / "db"
    out = json.loads(cli(plan, db, "--run", "ready", "--json", code=None).stdout)
    assert [(r["lever"], r["decision"]) for r in out["runs"][:2]] == [("la", "adopt"), ("lb", "adopt")], out
    runs = json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]
    lb, lc = (next(r for r in runs if r["lever"] == lid) for lid in ("lb", "lc"))
    # lb's two arms carry la's adopted flag; lb's own change is in its candidate only
    assert lb["arms"]["baseline"][-2:] == ["--a=2", "--b=1"] and lb["arms"]["candidate"][-2:] == ["--a=2", "--b=2"]
    assert lb["arms"]["stack"] == {"levers": ["la"], "args": ["--a=2"], "env": {}, "outside": []}
    log = Path(lb["log"]).read_text()
    assert "[baseline pair 0] flags: a=2 b=1 env=w" in log and "[candidate pair 0] flags: a=2 b=2 env=b" in log
    # lc is measured on la and lb: both arms carry both flags and lb's environment, its own --b=3 replaces --b=2
    log = Path(lc["log"]).read_text()
    assert "[baseline pair 0] flags: a=2 b=2 env=b" in log and "[candidate pair 0] flags: a=2 b=3 env=b" in log
    assert lc["arms"]["stack"]["levers"] == ["la", "lb"]


@pytest.mark.slow
def test_two_adopted_changes_to_one_key_are_refused_at_the_adopt(tmp_path):
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]') + lever("la3", 'candidate_args = ["--a=3"]'))
    db = tmp_path / "db"
    cli(plan, db, "decide", "la", "adopt", "--why", "measured elsewhere")
    proc = cli(plan, db, "decide", "la3", "adopt", "--why", "also", code=2)
    assert proc.stderr.strip() == ("optseq: la3: adopting la3 would set --a=3 in the stack, but la (adopted) set "
                                   "--a=2: the stack cannot hold both; decide la again (reject or defer) first, or "
                                   "change one of them")
    status = json.loads(cli(plan, db, "status", "--json").stdout)
    assert {v["id"]: v["state"] for v in status["levers"]} == {"la": "adopted", "la3": "ready"}
    # a run that would adopt it automatically records its numbers and says why it did not decide
    out = json.loads(cli(plan, db, "--run", "la3", "--json", code=None).stdout)["runs"][0]
    assert out["decision"] is None and "not decided: la3: adopting la3 would set --a=3" in out["message"], out


@pytest.mark.slow
def test_a_time_in_ms_reads_as_lower_is_better(tmp_path):
    # --a=2 makes the rate 1.5x: its time per item is 1.5x lower, and the lever is adopted, not rejected
    ms = f"""
[workload]
command = ["python", "{BENCH}", "--ms", "--a=1"]
metric = {{ name = "rate", regex = 'time: ([0-9.]+) ms', unit = "ms" }}
warmup = 0
"""
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]'), workload=ms)
    out = json.loads(cli(plan, tmp_path / "db", "--run", "la", "--json").stdout)["runs"][0]
    assert out["decision"] == "adopt" and out["summary"]["stats"]["higher_is_better"] is False, out["message"]
    assert 1.4 < out["summary"]["stats"]["estimate"] < 1.6


@pytest.mark.slow
def test_an_inconclusive_lever_goes_stale_like_a_decided_one(tmp_path):
    # lb changes nothing that matters (an environment variable the bench ignores) against a 1.0x bar: inconclusive
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]')
                     + lever("lb", 'candidate_env = { UNUSED = "1" }', extra='remeasure_when = ["la"]')
                     .replace("min_speedup = 1.2", "min_speedup = 1.0"))
    db = tmp_path / "db"
    out = json.loads(cli(plan, db, "--run", "lb", "--json").stdout)["runs"][0]
    assert out["verdict"] == "inconclusive", out["message"]
    states = {v["id"]: v for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"]}
    assert states["lb"]["state"] == "measured"
    cli(plan, db, "decide", "la", "adopt", "--why", "measured elsewhere")
    states = {v["id"]: v for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"]}
    assert states["lb"]["state"] == "stale" and states["lb"]["stale_reason"] == "la decided adopt after lb was measured"
    assert json.loads(cli(plan, db, "status", "--json").stdout)["next"] == "lb"  # re-measured on the new stack


@pytest.mark.slow
def test_an_edited_lever_goes_stale_naming_what_changed(tmp_path):
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]'))
    db = tmp_path / "db"
    out = json.loads(cli(plan, db, "--run", "la", "--json").stdout)["runs"][0]
    assert out["decision"] == "adopt"
    text = plan.read_text(encoding="utf-8")
    plan.write_text(text.replace('candidate_args = ["--a=2"]', 'candidate_args = ["--a=3"]'), encoding="utf-8")
    status = json.loads(cli(plan, db, "status", "--json").stdout)
    (la,) = status["levers"]
    assert la["state"] == "stale" and la["stale_reason"] == f"plan changed: la's candidate_args (since run {out['run_id']})"
    assert status["next"] == "la"
    assert "stale" in json.loads(cli(plan, db, "--run", "stale", "--json", code=None).stdout)["target"]
    # a re-measure of the edited lever stands on the new definition: nothing stale any more
    states = {v["id"]: v["state"] for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"]}
    assert states["la"] in ("adopted", "rejected", "measured")
    # an edit of what only bounds the run's length (its budget) changes nothing measured
    plan.write_text(plan.read_text(encoding="utf-8").replace("max_repeats = 12", "max_repeats = 24"), encoding="utf-8")
    assert json.loads(cli(plan, db, "status", "--json").stdout)["levers"][0]["state"] == states["la"]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["warn", "stale"])
def test_a_code_change_since_a_run_is_shown_or_made_stale(tmp_path, mode):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH.read_text(encoding="utf-8"), encoding="utf-8")
    workload = """
[workload]
command = ["python", "bench.py", "--a=1"]
metric = { name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }
warmup = 0
"""
    plan = plan_file(repo, lever("la", 'candidate_args = ["--a=2"]'), workload=workload)
    text = plan.read_text(encoding="utf-8").replace('lang = "en"', f'lang = "en"\ncode_changes = "{mode}"')
    plan.write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "bench")
    db = tmp_path / "db"
    out = json.loads(cli(plan, db, "--run", "la", "--json").stdout)["runs"][0]
    assert out["decision"] == "adopt"
    fp = json.loads(cli(plan, db, "runs", "--json").stdout)["runs"][0]["fingerprint"]
    assert fp["repo"]["root"] == str(repo) and fp["repo"]["diff"] == "" and len(fp["repo"]["head"]) == 40
    for i in range(2):
        (repo / "bench.py").write_text((repo / "bench.py").read_text() + f"\n# change {i}\n", encoding="utf-8")
        git(repo, "commit", "-qam", f"change {i}")
    (la,) = json.loads(cli(plan, db, "status", "--json").stdout)["levers"]
    moved = f"workload code changed since run {out['run_id']}: measured 2 commits ago ({fp['repo']['head'][:8]})"
    if mode == "warn":
        assert la["state"] == "adopted" and moved in la["warnings"]
    else:
        assert la["state"] == "stale" and la["stale_reason"] == moved


EDITOR = """
import os, runpy, sys
# the first arm run edits the plan, as a user would while `--run ready` goes: la's and lb's flags both change
plan, marker = os.environ["PLAN_TO_EDIT"], os.environ["PLAN_TO_EDIT"] + ".edited"
if not os.path.exists(marker):
    open(marker, "w").close()
    text = open(plan, encoding="utf-8").read()
    open(plan, "w", encoding="utf-8").write(text.replace('"--a=2"', '"--a=3"').replace('"--b=2"', '"--b=3"'))
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow
def test_a_plan_edited_while_run_ready_goes_is_read_again_between_levers(tmp_path):
    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR, encoding="utf-8")
    workload = f"""
[workload]
command = ["python", "{editor}", "{BENCH}", "--a=1", "--b=1"]
env = {{ PLAN_TO_EDIT = "{tmp_path / 'plan.toml'}" }}
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0
"""
    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]') + lever("lb", 'candidate_args = ["--b=2"]'),
                     workload=workload)
    db = tmp_path / "db"
    proc = cli(plan, db, "--run", "ready", "--json")
    assert "changed on disk: read again before the next lever" in proc.stderr, proc.stderr
    runs = {r["lever"]: r for r in json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]}
    assert runs["la"]["arms"]["candidate"][-2:] == ["--a=2", "--b=1"]  # la ran as the plan read before the edit
    assert runs["lb"]["arms"]["candidate"][-1] == "--b=3"  # lb, after it: the edited plan
    # the stack is the plan's word on each adopted lever's change: la as edited, and la stale until re-measured
    assert runs["la"]["verdict"] != "adopt" or "--a=3" in runs["lb"]["arms"]["baseline"]
    (la, lb) = json.loads(cli(plan, db, "status", "--json").stdout)["levers"]
    assert la["state"] == "stale" and la["stale_reason"].startswith("plan changed: la's candidate_args"), la


def test_the_live_estimate_of_a_time_is_oriented_from_its_first_pair(tmp_path):
    # before any pass is counted the book knows no direction: the samples' own say which way is better
    from optseq.state.plan.model import Rule
    from optseq.state.runs.passes import ABPasses
    from optseq.state.runs.run_pass import Collected, _running_estimate

    rule = Rule(metric="step_ms", min_speedup=1.2, repeats=6, max_repeats=12)
    passes = ABPasses(rule, replicate="pair")
    tally = Collected(samples_file=tmp_path / "samples.jsonl", book=passes.book, replicate="pair",
                      budget=passes.budget)
    estimates = []
    for i, (base, cand) in enumerate([(50.0, 25.0), (52.0, 26.0), (48.0, 24.5)]):  # the candidate twice as fast
        for arm, value in (("baseline", base), ("candidate", cand)):
            tally.samples.append({"event": "sample", "arm": arm, "metric": "step_ms", "value": value, "unit": "ms",
                                  "higher_is_better": False, "pair": i, "run": 1})
        estimates.append(_running_estimate(tally, rule, 1, 6))
    assert all(e is not None and 1.9 < e["estimate"] < 2.1 for e in estimates), estimates
