"""A six-lever screen at one lever's budget (40 launches) with a 10% interaction and one stalled launch, through the
real CLI on the stand-in workload (lever_scripts/screen_bench.py): the design its budget buys (two blocks of the
2^(6-2), 17 residual degrees of freedom, not one block of the 2^(6-1) with 10) sets the stall aside and names the
interaction. The stall is placed (SCREEN_STALL: the run with every lever off, block 1, 3× slow) and the noise fixed
by design run and block (SCREEN_FIXED), so the verdict is the same on every run whatever the machine's speed."""
from __future__ import annotations

from tests.state.runs.test_screen_run import LEVERS, plan_file, runs_of
from tests.state.runs.test_workload import cli, lever

KNOBS = "".join(lever(f"n{i}", f'candidate_env = {{ KNOB{i} = "1" }}') for i in (2, 3))


def test_a_six_lever_screen_at_forty_launches_sets_a_stalled_launch_aside_and_names_a_ten_percent_interaction(
        tmp_path):
    plan = plan_file(tmp_path, LEVERS + KNOBS, env='SCREEN_FIXED = "1", SCREEN_FUSE = "1.1", SCREEN_STALL = "3"')
    db = tmp_path / "db"
    proc = cli(plan, db, "--run", "screen", "--budget", "40")
    out = proc.stdout + proc.stderr
    screen = next(r for r in runs_of(plan, db) if r.get("kind") == "screen")
    facts = screen["screen"]
    said = facts["step"]["said"]
    assert len(said) == 1 and said[0].startswith("fast × fuse: 1.1") and "(aliased with n2 × n3)" in said[0], out
    assert "fast gains 1" in said[0] and "% more with fuse on" in said[0], said
    assert facts["design"]["generators"] == ["E=ABC", "F=BCD"], out  # the 2^(6-2) IV, in blocks of 16
    assert [sorted(b) for b in facts["blocks"]] == [list(range(16)), list(range(16))], out
    fit = facts["step"]["fit"]
    assert fit["residual_df"] == 17 - fit["downweighted"] and fit["downweighted"] == 1, fit
