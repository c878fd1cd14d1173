"""Choosing a runner: the plan's [runner] table, a lever's resources, and the one-line refusals."""
from __future__ import annotations

import os
import subprocess

import pytest

from optseq.state.plan.model import PlanError
from optseq.state.plan.loader import load
from optseq.state.plan.runner import RunnerConfig
from optseq.state.runners.choose import configure, make
from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan


def write(tmp_path, head: str = "", lever: str = ""):
    path = one_lever_plan(tmp_path, ["python", "bench.py"], extra=lever)
    path.write_text(head + "\n" + path.read_text())
    return path


def test_the_runner_table_and_resources_are_read(tmp_path):
    plan = load(write(tmp_path, '[runner]\nkind = "ray"\naddress = "http://h:8265"\nforward_env = ["HF_HOME"]',
                      "resources = { gpus = 1, cpus = 4 }"))
    assert plan.runner == RunnerConfig(kind="ray", address="http://h:8265", forward_env=("HF_HOME",))
    assert dict(plan.lever("lever").resources) == {"gpus": 1, "cpus": 4}


@pytest.mark.parametrize("head, lever, key, words", [
    ('[runner]\nkind = "slurm"', "", "runner.kind", "one of local, ray"),
    ('[runner]\nzone = "a"', "", "runner.zone", "unknown key"),
    ("", "resources = { gpus = 0.5 }", "levers.lever.resources.gpus", "whole gpus only"),
    ("", "resources = { tpus = 1 }", "levers.lever.resources.tpus", "unknown key"),
    ("", "resources = { gpus = -1 }", "levers.lever.resources.gpus", "expected 0 to 64"),
])
def test_bad_runner_settings_are_one_line(tmp_path, head, lever, key, words):
    with pytest.raises(PlanError) as err:
        load(write(tmp_path, head, lever))
    assert f": {key}: " in str(err.value) and words in str(err.value), str(err.value)


def test_the_command_line_beats_the_environment_beats_the_plan():
    plan_cfg = RunnerConfig(kind="ray", address="http://plan:8265")
    assert configure(plan_cfg, environ={}).address == "http://plan:8265"
    assert configure(plan_cfg, environ={"OPTSEQ_RAY_ADDRESS": "http://env:1"}).address == "http://env:1"
    assert configure(plan_cfg, address="http://flag:2", environ={"OPTSEQ_RAY_ADDRESS": "http://env:1"}).address \
        == "http://flag:2"
    assert configure(plan_cfg, "local", environ={"OPTSEQ_RUNNER": "ray"}).kind == "local"
    assert configure(None, environ={"OPTSEQ_RUNNER": "ray"}).kind == "ray"
    assert make(RunnerConfig()).name == "local"


def test_ray_without_an_address_refuses_the_run_in_one_line(tmp_path):
    path = write(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTSEQ_")}
    proc = subprocess.run([*OPTSEQ, "--plan", str(path), "--db", str(tmp_path / "db"), "--runner", "ray",
                           "--run", "lever"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("optseq: the ray runner needs the cluster's address")
