"""The wall clock set forward or back while optseq runs (a real process, its clock jumped mid-run): run
lengths, timeouts and run cost stay on the monotonic clock; the stamps stay in order."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ
from tests.console.test_runs_table import TINY_LEVER, lever, optseq, table, write_plan

JUMPER = str(Path(__file__).parents[1] / "clock_jump")
TWO_DAYS = 2 * 86400


def jumping(env: dict, at: Path, by: float) -> dict:
    """`env` for an optseq whose wall clock jumps `by` seconds once `at` exists."""
    path = os.pathsep.join(p for p in (JUMPER, env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "OPTSEQ_TEST_CLOCK_JUMP_AT": str(at), "OPTSEQ_TEST_CLOCK_JUMP_S": str(by)}


@pytest.mark.parametrize("by", [TWO_DAYS, -TWO_DAYS], ids=["forward", "back"])
def test_a_clock_jump_during_a_run_is_no_run_time_and_no_timeout(tmp_path, cli_env, by):
    # timeout_s = 120 in the plan: on the wall clock, a jump of two days forward would time the run out
    plan = write_plan(tmp_path, lever("tiny", ["python", str(TINY_LEVER)]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    jump, release = tmp_path / "jump", tmp_path / "release"
    run_env = {**jumping(env, jump, by), "TINY_LEVER_HOLD": str(release), "TINY_LEVER_HOLD_PASS": "1"}
    proc = subprocess.Popen([*OPTSEQ, "--run", "tiny", "--json"], env=run_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:  # pass 1 holds after its first pair: the run is under way
            seen.append(line)
            if "running estimate" in line:
                break
        assert any("running estimate" in line for line in seen), "".join(seen)
        jump.touch()
        seen_file = Path(str(jump) + ".seen")
        end = time.monotonic() + 120  # the jump is in effect before the run goes on (a hang guard, not a budget)
        while not seen_file.exists():
            assert time.monotonic() < end and proc.poll() is None, "the clock never jumped"
            time.sleep(0.01)
        release.touch()
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "".join(seen) + err
    summary, = json.loads(out)["runs"]
    assert summary["status"] == "succeeded", summary["message"]
    run = json.loads(optseq(env, "runs", "--json").stdout)["runs"][0]
    assert 0 < run["elapsed_s"] < 300, run  # its real length, not two days
    assert run["ended"] >= run["started"]
    if by > 0:  # the stamps show the jump (they are the wall clock's, for display), the length does not
        assert run["ended"][:10] > run["started"][:10]
    row, = table(optseq(env, "runs").stdout)
    assert "h" not in row["time"] and "d" not in row["time"], row
