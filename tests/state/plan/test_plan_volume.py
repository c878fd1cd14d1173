"""The plan's [volume] and each lever's share / effort_h / expect: parsed into typed fields, refused in one line."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from optseq.state.plan.model import Expect, PlanError
from optseq.state.plan.loader import load
from tests.conftest import OPTSEQ

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"

HEAD = """
[plan]
title = "Volume"
as_of = 2026-11-01

[[levers]]
id = "fast"
title = "Fast"
kind = "speedup"
plan_doc = "docs/fast.md"
{lever}

[[levers]]
id = "exp"
title = "Experiment"
kind = "experiment"
plan_doc = "docs/exp.md"
{experiment_lever}

[[levers]]
id = "gate"
title = "Gate"
kind = "decision"
[levers.criteria]
criteria = [{{ id = "c1" }}]
candidates = [{{ id = "a" }}]
"""

VOLUME = """
[volume]
s_per_iter = 30
assumed = ["s_per_iter"]

[[volume.experiments]]
id = "grow"
lever = "exp"
configs = 4
iterations = 200
runs = 3
assumed = ["runs"]
"""


def write(tmp_path, *, lever: str = "", experiment_lever: str = "", volume: str = VOLUME) -> Path:
    path = tmp_path / "plan.toml"
    # the volume first: a bare `volume = 3` must not land inside the last [[levers]] table
    path.write_text(volume + "\n" + HEAD.format(lever=lever, experiment_lever=experiment_lever), encoding="utf-8")
    return path


def refused(path: Path, key: str, fragment: str) -> None:
    with pytest.raises(PlanError) as info:
        load(path)
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{path}: {key}: "), line
    assert fragment in line, line


def test_a_volume_and_lever_fields_parse(tmp_path):
    plan = load(write(tmp_path, lever='share = 0.8\neffort_h = 4\nexpect = { speedup = 1.3, p_adopt = 0.5, note = "x" }'))
    fast = plan.lever("fast")
    assert (fast.share, fast.effort_h, fast.expect) == (0.8, 4.0, Expect(1.3, 0.5, "x"))
    assert plan.lever("exp").share is None and plan.lever("exp").expect is None
    (grow,) = plan.volume.experiments
    assert (grow.id, grow.lever, grow.configs, grow.iterations, grow.runs) == ("grow", "exp", 4, 200, 3)
    assert grow.assumed == ("runs",) and grow.rerun_when is None and grow.s_per_iter is None
    assert plan.volume.s_per_iter == 30.0 and plan.volume.assumed == ("s_per_iter",)


def test_the_default_plan_declares_the_seeds_volume():
    plan = load(DEFAULT_PLAN)
    experiments = {e.id: e for e in plan.volume.experiments}
    assert list(experiments) == ["model_size", "ablations", "seeds", "selectivity"]
    grow = experiments["model_size"]
    # the seed's numbers are declared as its own; what the seed does not give is marked assumed
    assert (grow.lever, grow.configs, grow.iterations) == ("model_size", 4, 200) and grow.assumed == ("runs",)
    assert all(set(e.assumed) == {"configs", "iterations", "runs"} for e in list(experiments.values())[1:])
    assert plan.volume.assumed == ("s_per_iter",)
    assert plan.lever("option_b").expect.speedup == 1.3 and "1.3×" in plan.lever("option_b").expect.note


@pytest.mark.parametrize("lever, key, fragment", [
    ("share = 1.5", "levers.fast.share", "at most 1, got 1.5"),
    ("share = 0", "levers.fast.share", "must be positive"),
    ('share = "half"', "levers.fast.share", "expected a number"),
    ("effort_h = -1", "levers.fast.effort_h", "expected 0 to 100,000 hours, got -1"),
    ("expect = {}", "levers.fast.expect", "give speedup, p_adopt or both"),
    ("expect = { speedup = 0 }", "levers.fast.expect.speedup", "must be positive"),
    ("expect = { p_adopt = 1.5 }", "levers.fast.expect.p_adopt", "a probability, 0 to 1, got 1.5"),
    ("expect = { speed = 1.3 }", "levers.fast.expect.speed", "unknown key"),
    ("expect = 1.3", "levers.fast.expect", "expected a table"),
])
def test_bad_lever_fields(tmp_path, lever, key, fragment):
    refused(write(tmp_path, lever=lever), key, fragment)


def test_an_experiment_lever_takes_no_share(tmp_path):
    refused(write(tmp_path, experiment_lever="share = 0.5"), "levers.exp.share",
            "only speedup and infra levers speed up an iteration (kind is experiment)")


GROW = '[volume]\ns_per_iter = 30\n[[volume.experiments]]\nid = "grow"\n'


@pytest.mark.parametrize("volume, key, fragment", [
    ("volume = 3", "volume", "expected a [volume] table"),
    ("[volume]\ns_per_iter = 30", "volume.experiments", "declares no planned experiments"),
    ("[volume]\nsecs = 30\n[[volume.experiments]]\nid = 'x'\nconfigs = 1\niterations = 1\nruns = 1",
     "volume.secs", "unknown key"),
    ("[volume]\ns_per_iter = -3\n[[volume.experiments]]\nid = 'x'\nconfigs = 1\niterations = 1\nruns = 1",
     "volume.s_per_iter", "must be positive"),
    ("[volume]\ns_per_iter_from = 'model_size'\n[[volume.experiments]]\nid = 'x'\nconfigs = 1\niterations = 1\n"
     "runs = 1", "volume.s_per_iter_from", "expected 'LEVER:METRIC'"),
    ("[volume]\ns_per_iter_from = 'fast:s'\n[[volume.experiments]]\nid = 'x'\nconfigs = 1\niterations = 1\nruns = 1",
     "volume.s_per_iter_from", "fast is a speedup lever; expected experiment"),
    ("[volume]\nassumed = ['s_per_iter']\n[[volume.experiments]]\nid = 'x'\nconfigs = 1\niterations = 1\nruns = 1",
     "volume.assumed[0]", "'s_per_iter' is marked assumed but not declared here"),
    (GROW + "iterations = 200\nruns = 3", "volume.experiments.grow.configs", "missing"),
    (GROW + "configs = 0\niterations = 200\nruns = 3", "volume.experiments.grow.configs", "must be positive"),
    (GROW + "configs = 4\niterations = 200\nruns = 2.5", "volume.experiments.grow.runs", "expected an integer"),
    (GROW + "configs = 4\niterations = 2000000\nruns = 1", "volume.experiments.grow.iterations",
     "at most 1,000,000 iterations"),
    (GROW + "configs = 4\niterations = 200\nruns = 1\nlever = 'nope'", "volume.experiments.grow.lever",
     "unknown lever 'nope'"),
    (GROW + "configs = 4\niterations = 200\nruns = 1\nlever = 'fast'", "volume.experiments.grow.lever",
     "fast is a speedup lever; expected experiment"),
    (GROW + "configs = 4\niterations = 200\nruns = 1\nrerun_when = ['gate']", "volume.experiments.grow.rerun_when[0]",
     "gate is a decision lever; expected speedup or infra"),
    (GROW + "configs = 4\niterations = 200\nruns = 1\nassumed = ['size']", "volume.experiments.grow.assumed[0]",
     "'size' is not one of its numbers (configs, iterations, runs, s_per_iter)"),
    (GROW + "configs = 4\niterations = 200\nruns = 1\n[[volume.experiments]]\nid = 'grow'\nconfigs = 1\n"
            "iterations = 1\nruns = 1", "volume.experiments.grow", "duplicate planned experiment id"),
    ("[volume]\n[[volume.experiments]]\nid = 'a b'\nconfigs = 1\niterations = 1\nruns = 1",
     "volume.experiments[0].id", "not a valid id"),
])
def test_bad_volume(tmp_path, volume, key, fragment):
    refused(write(tmp_path, volume=volume), key, fragment)


def test_a_bad_volume_is_one_line_exit_2_from_the_cli(tmp_path, cli_env):
    path = write(tmp_path, lever="share = 2")
    line = path.read_text(encoding="utf-8").splitlines().index("share = 2") + 1  # the error says where, too
    for args in (["--plan", str(path), "whatif"], ["validate", str(path)]):
        proc = subprocess.run([*OPTSEQ, *args], env=cli_env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == (f"optseq: {path}: levers.fast.share: a fraction of an iteration, at most 1, "
                                       f"got 2 (line {line})")
