"""What a lever run is measured on: the stack the adopted levers make, the chosen model config, the fingerprint."""
from __future__ import annotations

import re
from typing import Any


def stack_env(plan, adopted) -> dict[str, str]:
    """The toggles of the adopted command-pair levers, in stack order: both arms of the next lever run with them.

    Only a lever whose arms are one command told apart by its environment contributes: its candidate_env is
    all it takes to turn it on. Two different commands cannot be composed into a third, so those levers
    reach later arms through OPTSEQ_INFRA only.
    """
    env: dict[str, str] = {}
    for lever_id in adopted:
        arms = plan.lever(lever_id).arms if plan.has_lever(lever_id) else None
        if arms is not None and arms.baseline == arms.candidate:
            env.update(dict(arms.candidate_env))
    return env


def config_of(name: str) -> dict:
    """`h1024x6` → hidden 1024, layers 6: the model config the next runs get in OPTSEQ_INFRA."""
    match = re.fullmatch(r"h(\d+)x(\d+)", name)
    config: dict[str, Any] = {"name": name}
    if match:
        config.update(hidden=int(match.group(1)), layers=int(match.group(2)))
    return config


def fingerprint(env: dict, infra: dict) -> dict:
    """What a number was measured on: device, library versions, workload code, infra state."""
    device = env.get("gpu") or env.get("cpu") or env.get("device")
    versions = {k: env[k] for k in ("python", "torch", "cuda", "bot_backend") if k in env}
    found = {"device": device, "versions": versions, "code_hash": env.get("code_hash"), "infra": infra}
    if env.get("workload"):
        found["workload"] = env["workload"]
    return found
