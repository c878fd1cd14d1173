"""Gains held to account: `optseq --run watch` re-checks every adopted lever on the current code and stack, says
`holds`, `eroded` or `inconclusive` of each, decides nothing, and fails a nightly job (exit 6) when a gain eroded;
status and the export say so, and what was measured on top of an eroded lever goes stale. Through the CLI, on a
stand-in bench whose gain an environment variable sets."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ

BENCH = Path(__file__).parents[1] / "lever_scripts" / "gain_bench.py"
PLAN = f"""
[plan]
title = "Watched gains"
as_of = 2026-12-04
lang = "en"

[workload]
command = ["python", "{BENCH}"]
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0

[[levers]]
id = "fast"
title = "the fast path"
kind = "speedup"
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
candidate_args = ["--fast=1"]

[[levers]]
id = "on_top"
title = "measured on top of the fast path"
kind = "speedup"
requires = "fast:adopt"
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 24 }}
[levers.arms]
candidate_args = ["--other=1"]
"""


def cli(plan: Path, db: Path, *args: str, code: int | None = 0, gain: str | None = None):
    env = {**os.environ, **({"GAIN": gain} if gain else {})}
    env.pop("GAIN", None) if gain is None else None
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], capture_output=True, text=True,
                          timeout=600, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert code is None or proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def levers(plan: Path, db: Path) -> dict:
    return {v["id"]: v for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"]}


@pytest.fixture
def adopted(tmp_path) -> tuple[Path, Path]:
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(PLAN, encoding="utf-8")
    ran = json.loads(cli(plan, db, "--run", "ready", "--json").stdout)["runs"]
    assert [(r["lever"], r["decision"]) for r in ran] == [("fast", "adopt"), ("on_top", "adopt")], ran
    return plan, db


@pytest.mark.slow  # lever runs: every arm a process
def test_a_lost_gain_is_eroded_fails_the_watch_and_stales_what_stood_on_it_but_stays_adopted(adopted):
    plan, db = adopted
    watch = cli(plan, db, "--run", "watch", "--json", code=6, gain="1.0")  # the code under the lever changed
    runs = json.loads(watch.stdout)["runs"]
    assert [(r["lever"], r["verdict"], r["decision"]) for r in runs] == [
        ("fast", "eroded", None), ("on_top", "holds", None)], runs
    assert "watch: 2 adopted levers in dependency order (fast, on_top)" in watch.stderr

    found = levers(plan, db)
    fast = found["fast"]
    assert fast["state"] == "adopted" and fast["outcome"] == "adopt"  # never silently dropped from the stack
    assert fast["note"].startswith("eroded: 1.0") and " at run 3 " in fast["note"]
    assert "against 1.5" in fast["note"] and "when adopted at run 1" in fast["note"], fast["note"]
    assert found["on_top"]["state"] == "stale"
    assert found["on_top"]["stale_reason"].startswith("fast's gain eroded (eroded: 1.0")
    assert "after on_top was measured on top of it in run 2" in found["on_top"]["stale_reason"]
    assert any(item.startswith("fast: its gain eroded: ") for item in json.loads(
        cli(plan, db, "status", "--json").stdout)["todo"])
    assert cli(plan, db, "status").returncode == 0  # status reports, it does not fail

    doc = cli(plan, db, "export", "--lang", "en").stdout
    assert "adopt 1.5" in doc and "— eroded: 1.0" in doc and "against 1.5" in doc

    # the runs are the lever's, kept as every run is, marked as watches
    history = json.loads(cli(plan, db, "runs", "fast", "--json").stdout)["runs"]
    assert [r.get("watch", False) for r in history] == [False, True]

    # the user decides: a re-run measures the lever again and decides it as any run does
    again = json.loads(cli(plan, db, "--run", "fast", "--json", code=None, gain="1.0").stdout)["runs"][0]
    assert again["decision"] == "reject"
    assert levers(plan, db)["fast"]["eroded"] is None


@pytest.mark.slow
def test_a_gain_that_holds_says_so_and_the_watch_exits_0(adopted):
    plan, db = adopted
    # two at once, as a cluster runs them (here they share the cores: the stand-in's numbers do not depend on it)
    runs = json.loads(cli(plan, db, "--run", "watch", "--parallel", "2", "--json", code=0).stdout)["runs"]
    assert sorted((r["lever"], r["verdict"]) for r in runs) == [("fast", "holds"), ("on_top", "holds")]
    found = levers(plan, db)
    assert found["fast"]["watch"]["verdict"] == "holds" and found["fast"]["eroded"] is None
    assert found["on_top"]["state"] == "adopted"  # nothing went stale


def test_nothing_to_watch_before_anything_is_adopted(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    refused = cli(plan, tmp_path / "db", "--run", "watch", code=3)
    assert "nothing to run for 'watch': no adopted lever has a command to watch it with" in refused.stderr


@pytest.mark.slow  # a watch's arms are processes
def test_an_eroded_gain_adopted_by_hand_is_told_plainly_everywhere(tmp_path):
    """Issue 38, point 10: adopted by hand (no run, so no figure), then a watch finds a 3,000x slowdown. No `?`
    for the figure when adopted, no `0.00×` for the one found, no ✅ beside it, and the pending table lists it as
    the status to-do does."""
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(PLAN, encoding="utf-8")
    cli(plan, db, "decide", "fast", "adopt", "--why", "the profile says so")
    cli(plan, db, "--run", "watch", code=6, gain="0.0003")
    fast = levers(plan, db)["fast"]
    assert re.match(r"eroded: 3\.\d\de-4× \[\d\.\d\de-4, \d\.\d\de-4\] at run 1 ", fast["note"]), fast["note"]
    assert fast["note"].endswith("against no figure when adopted (decided by hand, with no run)"), fast["note"]
    assert any(item.startswith("fast: its gain eroded") for item in json.loads(
        cli(plan, db, "status", "--json").stdout)["todo"])

    doc = cli(plan, db, "export", "--lang", "en").stdout
    assert "?" not in doc and "0.00×" not in doc, doc
    status = doc[doc.index("## Current status"):]
    line = next(x for x in status.splitlines() if "the fast path" in x)
    assert line.startswith("- ⚠️ the fast path: adopt") and "✅" not in line, line
    assert fast["note"] in line  # the export says what status says
    pending = doc[doc.index("## Pending levers"):doc.index("## Dependency graph")]
    assert "No lever is waiting for a decision." not in pending and "| the fast path |" in pending, pending
    assert "the fast path ⚠️ adopt (eroded)" in doc and "class l_fast stale" in doc  # the graph: not done
    ko = cli(plan, db, "export", "--lang", "ko").stdout
    assert "이득 소실: run 1에서 3." in ko and "채택 시 값 없음 (run 없이 수동으로 결정됨)" in ko, ko
