"""The lines that print a run's figures say its rule's conclusion after them whole, made from the verdict the record
keeps (its said), never cut out of the run's message at a `: ` (which cut a conclusion with a colon of its own down
to its last clause). Through the CLI, on the seeded stand-in bench of test_real_noise."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

BENCH = Path(__file__).resolve().parents[1] / "state" / "lever_scripts" / "real_noise.py"


def test_the_summary_line_says_the_rules_conclusion_whole(tmp_path, cli_env):
    # the baseline first in every pair: `{figures}: the baseline ran first in all 6 pairs, …: not decided (…)`
    plan = one_lever_plan(tmp_path, ["python", str(BENCH), "--ratio", "1.0", "--drift", "0.01", "--order",
                                     "baseline-first"], timeout=300, title="Said lines",
                          rule='metric = "items_per_s", min_speedup = 1.0, repeats = 6, max_repeats = 72, '
                               'pairs_per_launch = 6')
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    proc = subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    record = json.loads(subprocess.run([*OPTSEQ, "runs", "--json"], env=env, capture_output=True, text=True,
                                       timeout=120).stdout)["runs"][0]
    verdict = record["summary"]["verdict"]
    assert verdict["said"]["key"] == "one_arm_first", verdict
    figures = verdict["said"]["fields"]["speed"]
    assert figures["key"] == "speed"
    # the conclusion is the reason less the figures it opens with, and it has a `: ` of its own
    opening = verdict["reason"].index(": ") + 2
    whole = verdict["reason"][opening:]
    assert whole.startswith("the baseline ran first in all ") and ": not decided (" in whole, whole
    line = next(line for line in proc.stdout.splitlines() if line.startswith(f"run {record['id']} lever: "))
    assert line.endswith(f"  → inconclusive  ({whole})"), line
