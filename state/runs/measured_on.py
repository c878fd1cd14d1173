"""What a lever run is measured on: the stack the adopted levers make, the chosen model config, the fingerprint."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from optseq.state.plan.model import Plan
from optseq.state.plan.workload import Stack, compose
from optseq.state.runs.host import MachineReads


def stack(plan: Plan, machine: MachineReads, without: str) -> Stack:
    """What both arms of `without`'s run carry: the adopted levers' changes (flags, environment) in the order they
    were adopted, the measured lever itself left out (its baseline is the stack without it, also when it is
    re-measured after adoption). A lever written as two whole commands reaches later runs through OPTSEQ_INFRA
    only: there is no third command the two compose into. An adopted branch lever joins once its commit is merged
    (its code is then the baseline's, its flags and environment the stack's); until then it is named `unmerged`."""
    adopted = [lid for lid in machine.stack_order() if lid != without]
    found = compose([(lid, plan.lever(lid).arms if plan.has_lever(lid) else None) for lid in adopted])
    unmerged = tuple(lid for lid in machine.adoption_order() if lid != without and machine.unmerged(lid))
    return replace(found, unmerged=unmerged) if unmerged else found


def config_of(name: str) -> dict:
    """`h1024x6` → hidden 1024, layers 6: the model config the next runs get in OPTSEQ_INFRA."""
    match = re.fullmatch(r"h(\d+)x(\d+)", name)
    config: dict[str, Any] = {"name": name}
    if match:
        config.update(hidden=int(match.group(1)), layers=int(match.group(2)))
    return config


CI_SIZE = "ci"
"""The reference workload's bench size for CPUs and CI (`--size ci`, the default): its figures are the workload's
at that size, not the seed's nor a team's, and every view that shows one in a plan's place says so."""


def at_ci_size(stats) -> bool:
    """Whether a run's figures (its stats, or an experiment's summary) come from the reference workload at CI size."""
    return isinstance(stats, dict) and stats.get("bench_size") == CI_SIZE


def fingerprint(env: dict, infra: dict) -> dict:
    """What a number was measured on: device, library versions, workload code, infra state."""
    device = env.get("gpu") or env.get("cpu") or env.get("device")
    versions = {k: env[k] for k in ("python", "torch", "cuda", "bot_backend") if k in env}
    found = {"device": device, "versions": versions, "code_hash": env.get("code_hash"), "infra": infra}
    if env.get("workload"):
        found["workload"] = env["workload"]
    return found


FALLBACK = "the launcher's: the node said nothing of its testbed"
"""What a cluster's run says of a testbed its node did not report (the job's first line failed: no optseq there)."""


def measured_on_testbed(env: dict, launched: dict | None, here: dict, runner: str | None) -> dict:
    """The testbed whose machine measured a run: on a cluster the node's, from the env event its job starts with
    (state/runs/testbed.py on the node), else the launcher's marked as such; locally this process' (`launched`,
    what the run's start recorded, else `here`). A node's word is checked before it is kept: a wrong-shaped one is
    no word."""
    from optseq.state.plan.testbed import name_problem

    mine = launched or here
    if runner in (None, "local"):
        return mine
    node = env.get("testbed")
    if (isinstance(node, dict) and name_problem(node.get("name")) is None and isinstance(node.get("id"), str)
            and isinstance(node.get("parts"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in node["parts"].items())):
        return {"id": node["id"], "name": node["name"], "parts": dict(node["parts"])}
    return {**{k: v for k, v in mine.items() if k != "fallback"}, "fallback": FALLBACK}
