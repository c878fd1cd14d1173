"""`optseq --run screen [LEVER …]`: several levers of the workload decided together by a two-level design (issue 40).
Through the real CLI on a stand-in workload (lever_scripts/screen_bench.py) whose speed is a product of known
per-lever factors and one known interaction: what it adopts, rejects, names and confirms; a budget that runs out;
Ctrl-C and a killed screen; bad input refused in one line, nothing recorded."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.console.test_signals import _alive, _held
from tests.state.runs.test_workload import cli, lever

BENCH = Path(__file__).parents[1] / "lever_scripts" / "screen_bench.py"
LEVERS = (lever("fast", 'candidate_args = ["--fast=1"]') + lever("wide", 'candidate_args = ["--wide=1"]')
          + lever("null", 'candidate_env = { NULL_KNOB = "1" }') + lever("fuse", 'candidate_args = ["--fuse=1"]'))
"""fast ×1.5 and wide ×1.3 alone; null nothing; fuse nothing alone, ×1.4 with fast on. Each decided at 1.2×."""


PROTOCOL = f"""
[[levers]]
id = "bench"
title = "a protocol bench"
kind = "speedup"
code = "merged-default-off"
run = ["python", "{BENCH}"]
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}
"""


def plan_file(tmp_path: Path, levers: str = LEVERS, env: str = "", extra: str = "") -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[plan]
title = "Screen"
as_of = 2026-12-01
lang = "en"

[workload]
command = ["python", "{BENCH}", "--fast=0", "--wide=0", "--fuse=0"]
env = {{ {env} }}
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0
{levers}
{extra}
""", encoding="utf-8")
    return path


def runs_of(plan: Path, db: Path) -> list[dict]:
    return json.loads(cli(plan, db, "runs", "--json").stdout)["runs"]


def states(plan: Path, db: Path) -> dict[str, str]:
    return {v["id"]: v["state"] for v in json.loads(cli(plan, db, "status", "--json").stdout)["levers"]}


def test_a_screen_of_four_levers_adopts_the_gains_rejects_the_null_names_the_interaction_and_confirms(tmp_path):
    plan, db = plan_file(tmp_path), tmp_path / "db"
    proc = cli(plan, db, "--run", "screen")
    out = proc.stdout
    assert "resolution" in out or "full factorial" in out or "2^" in out, out
    assert "  block 1: runs " in out and "  block 2: runs " in out, out
    assert "  fast: adopt" in out and "  wide: adopt" in out and "  null: reject" in out, out
    assert "fuse" in out and "×" in out and "confirmed " in out and "fuse" in out.split("confirmed ", 1)[1], out
    assert "  fuse: adopt" in out, out
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    assert screen["status"] == "succeeded" and screen["lever"] is None
    facts = screen["screen"]
    assert facts["levers"] == ["fast", "wide", "null", "fuse"] and isinstance(facts["seed"], int)
    runs = len(facts["design"]["runs"])
    assert all(sorted(block) == list(range(runs)) for block in facts["blocks"]) and len(facts["blocks"]) >= 2
    assert facts["launches"] == runs * len(facts["blocks"])  # warmup = 0: every launch a design run
    said = facts["step"]["said"]
    assert any("fuse" in s and "fast" in s for s in said), said  # the interaction, named
    confirmed = facts["confirmed"]
    assert confirmed["outcome"] == "adopt" and "fuse" in confirmed["levers"] and "fast" in confirmed["levers"]
    check = next(r for r in runs_of(plan, db) if r["id"] == confirmed["run"])
    assert check["kind"] == "confirm" and check["status"] == "succeeded" and check["verdict"] == "adopt"
    # the samples: one per design run, arm run-<index>, its block, its launch token
    samples = [json.loads(line) for line in Path(screen["samples_file"]).read_text().splitlines()]
    assert len(samples) == facts["launches"] and all(s["arm"].startswith("run-") and s["block"] >= 1
                                                     and s.get("launch") for s in samples)
    assert states(plan, db) == {"fast": "adopted", "wide": "adopted", "null": "rejected", "fuse": "adopted"}
    # the same state replayed from the journals alone (the screen's record moves each of its levers)
    (db / "optseq.json").unlink()
    cli(plan, db, "doctor", "--rebuild")
    assert states(plan, db) == {"fast": "adopted", "wide": "adopted", "null": "rejected", "fuse": "adopted"}
    decisions = json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"]
    by = {d["lever"]: d for d in decisions}
    assert all(by[lid]["source"] == "screen" and by[lid]["runs"][0] == screen["id"] for lid in by)
    assert confirmed["run"] in by["fuse"]["runs"]
    # decided in plan order: adopted together, they join the stack in that order
    assert [d["lever"] for d in decisions] == ["fast", "wide", "null", "fuse"]


def test_a_screen_whose_budget_runs_out_leaves_its_levers_measured_with_what_would_settle_them(tmp_path):
    # each lever exactly at its threshold: no look can tell it either way; the noise, a fixed function of each run
    levers = (lever("fast", 'candidate_args = ["--fast=1"]').replace("min_speedup = 1.2", "min_speedup = 1.5")
              + lever("wide", 'candidate_args = ["--wide=1"]').replace("min_speedup = 1.2", "min_speedup = 1.3"))
    plan = plan_file(tmp_path, levers + PROTOCOL, env='SCREEN_NOISE = "0.05", SCREEN_FIXED = "1"')
    db = tmp_path / "db"
    proc = cli(plan, db, "--run", "screen", "--budget", "16")
    # by default the ready levers that compose: the protocol bench is left out, and said so in one line
    assert "optseq: bench: left out: is a protocol bench" in proc.stderr, proc.stderr
    assert "  fast: inconclusive" in proc.stdout and "  wide: inconclusive" in proc.stdout, proc.stdout
    assert "budget of 16 launches is spent" in proc.stdout and "--budget" in proc.stdout, proc.stdout
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    # the budget it names is the one its own "about N blocks more" asks for, not a fixed two blocks more
    runs = len(screen["screen"]["design"]["runs"])
    for call in screen["screen"]["step"]["calls"].values():
        more = call["more_blocks"]
        assert more is not None and more >= 0, call
        said = (f"--budget {16 + more * runs}, or run it on its own" if more else
                "it lies at its threshold; no number of blocks is likely to settle it; its budget of 16 launches "
                "is spent")
        assert said in proc.stdout, (said, proc.stdout)
    assert proc.stdout.count("lies at its threshold") <= 2, proc.stdout  # once a lever, never twice in one line
    assert screen["status"] == "succeeded" and screen["screen"]["spent"] is True
    assert screen["screen"]["launches"] <= 16 and screen["screen"]["verdicts"] == {"fast": "inconclusive",
                                                                                 "wide": "inconclusive"}
    assert states(plan, db) == {"fast": "measured", "wide": "measured", "bench": "ready"}
    (db / "optseq.json").unlink()
    cli(plan, db, "doctor", "--rebuild")  # replayed from the journals: measured still, each with its own reason
    assert states(plan, db) == {"fast": "measured", "wide": "measured", "bench": "ready"}
    todo = json.loads(cli(plan, db, "status", "--json").stdout)["todo"]
    assert any(item.startswith("fast: ") and "straddles 1.5" in item for item in todo), todo
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"] == []


def test_a_lever_that_breaks_a_workload_guard_is_rejected_whatever_its_gain(tmp_path):
    plan = plan_file(tmp_path, lever("fast", 'candidate_args = ["--fast=1"]')
                     + lever("wide", 'candidate_args = ["--wide=1"]'),
                     extra="").read_text(encoding="utf-8").replace(
        "warmup = 0", "warmup = 0\nguards = [{ name = \"err\", regex = 'err: ([0-9.]+)', max = 0.5 }]")
    path = tmp_path / "guarded.toml"
    path.write_text(plan, encoding="utf-8")
    db = tmp_path / "db"
    out = json.loads(cli(path, db, "--run", "screen", "--json").stdout)  # the summary as JSON
    (report,) = out["runs"]
    assert report["kind"] == "screen" and report["decisions"] == {"fast": "adopt", "wide": "reject"}, report
    why = report["calls"]["wide"]["why"]
    assert "guard err broken in the design runs with wide on (runs " in why and "never with it off" in why, why
    assert out["next"] is None
    assert states(path, db) == {"fast": "adopted", "wide": "rejected"}


def _held_screen(tmp_path: Path, sig: int):
    """A screen held in its second block, then sent `sig`: (optseq's exit code, stdout, stderr, the held pids)."""
    plan, db = plan_file(tmp_path, env='SCREEN_HOLD_BLOCK = "2"'), tmp_path / "db"
    folder = tmp_path / "held"
    folder.mkdir()
    proc = subprocess.Popen([*OPTSEQ, "--plan", str(plan), "--db", str(db), "--run", "screen", "--budget", "96"],
                            env={**os.environ, "HELD_DIR": str(folder)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        pids = _held(folder, lambda: proc.poll() is None, "design run")
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return plan, db, proc.returncode, out, err, pids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_during_a_screen_records_it_cancelled_decides_nothing_and_says_what_was_measured(tmp_path, sig):
    plan, db, code, out, err, pids = _held_screen(tmp_path, sig)
    assert code == 128 + sig, out + err
    assert "Traceback" not in err
    assert "1 block done" in out and "effects so far" in out and "nothing decided" in out, out
    assert not [pid for pid in pids if _alive(pid)]
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    assert screen["status"] == "cancelled" and len(screen["screen"]["blocks"]) == 1
    assert set(states(plan, db).values()) == {"ready"}
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"] == []


def test_a_killed_screen_is_interrupted_at_the_next_open_its_levers_free_and_its_blocks_on_record(tmp_path):
    plan, db, code, out, err, pids = _held_screen(tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    proc = cli(plan, db, "status", "--json")  # the next open finds it gone: interrupted, its group stopped
    assert "is interrupted: its optseq stopped after 1 whole block" in proc.stderr, proc.stderr
    assert set(v["state"] for v in json.loads(proc.stdout)["levers"]) == {"ready"}
    assert not [pid for pid in pids if _alive(pid)]
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    assert screen["status"] == "interrupted" and len(screen["screen"]["blocks"]) == 1  # what it measured
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"] == []
    # status reads the screen from the machine's run index (its snapshot), not the record: the block is there too
    said = cli(plan, db, "status").stdout
    assert "interrupted" in said and "1 block," in said and "0 blocks" not in said, said




def test_a_workload_whose_metric_line_is_misspelled_fails_the_screen_saying_where_and_deciding_nothing(tmp_path):
    # the plan reads `rate_:` where the bench prints `rate:`: a metric its bench spells otherwise
    plan = plan_file(tmp_path)
    plan.write_text(plan.read_text(encoding="utf-8").replace("regex = 'rate: ", "regex = 'rate_: "), encoding="utf-8")
    db = tmp_path / "db"
    proc = cli(plan, db, "--run", "screen", code=1)
    said = next(line for line in proc.stdout.splitlines() if "matched nothing" in line)
    assert "regex 'rate_: ([0-9.]+)' matched nothing; last output line: " in said, said
    assert "0 blocks done, 0 launches measured" in said and "nothing decided" in said, said
    assert json.loads(cli(plan, db, "runs", "--json").stdout)["decisions"] == []
    assert set(states(plan, db).values()) == {"ready"}


@pytest.mark.parametrize("args, extra, said", [
    (["fast"], "", "a screen needs 2 to 8 levers that compose on the stack, got 1 (fast)"),
    (["fast", "nope"], "", "unknown lever 'nope'"),
    (["fast", "fast2"], lever("fast2", 'candidate_args = ["--fast=2"]'), "fast and fast2 both change --fast"),
    (["fast", "bench"], PROTOCOL, "bench is a protocol bench"),
    (["fast", "wide", "--budget", "0"], "", "--budget 0"),
    (["fast", "wide", "--budget", "8"], "", "a screen of 2 levers needs a budget of 16 launches at least"),
])
def test_bad_input_is_refused_in_one_line_with_nothing_recorded(tmp_path, args, extra, said):
    plan, db = plan_file(tmp_path, extra=extra), tmp_path / "db"
    proc = cli(plan, db, "--run", "screen", *args, code=2)
    assert said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not db.exists() or not runs_of(plan, db)


def test_budget_is_refused_beside_any_run_but_a_screen(tmp_path):
    plan, db = plan_file(tmp_path), tmp_path / "db"
    proc = cli(plan, db, "--run", "ready", "--budget", "40", code=2)
    assert proc.stderr.strip() == "optseq: --budget applies to --run screen (the launches its design may spend)"
    assert not db.exists()


def test_a_resolution_four_screen_folds_over_a_significant_alias_chain_and_names_the_true_pair(tmp_path):
    """Seven levers at a budget of 48: a 2^(7-3) IV of 16 runs, where fast × fuse = null × n4 = n2 × n3 is one
    chain. The first look (two blocks) finds the chain; the third block runs the fold-over on fast, and the run names
    fast × fuse alone, lets the four knobs go to their own rule and confirms fast + fuse."""
    knobs = "".join(lever(f"n{i}", f'candidate_env = {{ KNOB{i} = "1" }}') for i in (2, 3, 4))
    # SCREEN_FIXED: each run's noise fixed by its design run and block, so a chance interaction at the 4% spent
    # cannot name a second chain in one run of the test and not in the next
    plan, db = plan_file(tmp_path, LEVERS + knobs, env='SCREEN_FIXED = "1"'), tmp_path / "db"
    proc = cli(plan, db, "--run", "screen", "--budget", "48")
    out = proc.stdout + proc.stderr
    assert "fast × fuse = null × n4 = n2 × n3: an alias chain, significant; folding the design over on fast " \
           "from block 3" in out, out
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    facts = screen["screen"]
    assert facts["design"]["fold"] == "A" and facts["design"]["fold_block"] == 3
    assert [sorted(b) for b in facts["blocks"]] == [list(range(16)), list(range(16)), list(range(16, 32))]
    said = facts["step"]["said"]
    assert len(said) == 1 and said[0].startswith("fast × fuse: ") and "aliased" not in said[0], said
    assert facts["confirmed"]["levers"] == ["fast", "fuse"] and facts["confirmed"]["outcome"] == "adopt"
    assert states(plan, db) == {"fast": "adopted", "wide": "adopted", "null": "rejected", "fuse": "adopted",
                                "n2": "rejected", "n3": "rejected", "n4": "rejected"}
