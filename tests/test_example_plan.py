"""The cpu_train example plan: it validates, one of its levers runs end to end, and its toggles are real."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import OPTSEQ, ROOT

EXAMPLE = ROOT / "configs" / "examples" / "cpu_train"
PLAN = EXAMPLE / "plan.toml"
HANG_GUARD_S = 600  # these runs take seconds; the limit only stops a hung child from stalling the suite


def optseq(*args, db=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}
    if db is not None:
        env["OPTSEQ_DB"] = str(db)
    return subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)


def train(**toggles):
    """One real run of train.py with only these TRAIN_* variables set (none leak in from the caller)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAIN_")}
    env.update({f"TRAIN_{k.upper()}": v for k, v in toggles.items()})
    proc = subprocess.run([sys.executable, "train.py"], cwd=EXAMPLE, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


def test_example_plan_validates():
    proc = optseq("validate", str(PLAN))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok (4 levers" in proc.stdout


@pytest.mark.slow  # real training runs in pairs through the CLI
def test_one_example_lever_runs_through_the_cli(tmp_path):
    db = tmp_path / "state"
    # the example as shipped, but for one pass of channels_last's 6 pairs (its rule may ask for 12): the flow
    # is under test here, and each pair is two trainings
    example = tmp_path / "cpu_train"
    shutil.copytree(EXAMPLE, example, ignore=shutil.ignore_patterns("__pycache__", ".optseq"))
    text = (example / "plan.toml").read_text(encoding="utf-8")
    lever = text.index('id = "channels_last"')
    cap = text.index("max_repeats = 12", lever)
    plan = example / "plan.toml"
    plan.write_text(text[:cap] + "max_repeats = 6" + text[cap + len("max_repeats = 12"):], encoding="utf-8")
    # threads is decided by hand so the lever runs on one thread: two OpenMP threads on a busy two-core machine
    # can be tens of times slower (see tests/conftest.py), and this test is about the flow, not the speed
    decided = optseq("--plan", str(plan), "decide", "threads", "reject", "--why", "test: one thread", db=db)
    assert decided.returncode == 0, decided.stdout + decided.stderr
    proc = optseq("--plan", str(plan), "--run", "channels_last", "--json", db=db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert [r["lever"] for r in out["runs"]] == ["channels_last"]
    run = out["runs"][0]
    assert run["status"] == "succeeded", run
    assert run["verdict"] in ("adopt", "reject", "inconclusive"), run
    stats, verdict = run["summary"]["stats"], run["summary"]["verdict"]
    # a command-pair lever runs every arm as its own process: its pairs are the sign test's units
    assert stats["metric"] == "samples_per_s" and stats["n"] == 6 and stats["replicate"] == "pair", stats
    guard = next(g for g in verdict["guards"] if g["name"] == "final_loss")
    # the layout changes only the order of summation, so the held-out loss must hold whatever the speed
    assert guard["ok"] is True and guard["limit_max"] == 0.01, guard


def debug_facts(lines):
    line = next(l for l in lines if l.startswith("debug: "))
    return dict(item.split("=", 1) for item in line[len("debug: "):].split())


def test_train_toggles_change_what_runs():
    pytest.importorskip("torch")
    plain = train(debug="1")
    facts = debug_facts(plain)
    assert facts == {"threads": "1", "weights_channels_last": "False", "input_channels_last": "False",
                     "logits_dtype": "torch.float32", "loader_processes": "0"}
    toggled = debug_facts(train(debug="1", threads="2", channels_last="1", bf16="1", workers="1"))
    assert toggled == {"threads": "2", "weights_channels_last": "True", "input_channels_last": "True",
                       "logits_dtype": "torch.bfloat16", "loader_processes": "1"}
    last = json.loads(plain[-1])
    assert set(last) == {"samples_per_s", "final_loss"} and last["samples_per_s"] > 0
    printed = next(float(l.split(": ")[1]) for l in plain if l.startswith("final loss: "))
    assert abs(printed - last["final_loss"]) < 1e-5  # the regex and json sources read the same number


def test_every_plan_doc_the_default_plan_names_ships_with_the_repo():
    from optseq.state.plan.loader import load
    from tests.conftest import DEFAULT_PLAN

    named = [lever.plan_doc for lever in load(DEFAULT_PLAN).levers if lever.plan_doc]
    assert named and [doc for doc in named if not (ROOT / doc).is_file()] == []
