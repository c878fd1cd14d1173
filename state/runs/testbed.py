"""The testbed this process measures on: a name the user reads and sets, and the machine's fingerprint behind it.

The fingerprint's parts are what decides a number and stays put across reboots and load: the host's name, the CPU
model and how many logical cores it has, the NVIDIA GPUs the driver lists, the OS and its kernel's major version.
Everything is read from files (/proc, the hostname): no subprocess, so `status` may ask it on every call; the
answer is kept for the process. The id (`gpu01-3f9a2c`) is the host's name and six hex digits of the parts, so a
reinstalled box with another GPU is another testbed, and two boxes named alike are told apart.
"""
from __future__ import annotations

import functools
import json
import os
import platform
from pathlib import Path

from optseq.state.errors import InputError
from optseq.state.plan.testbed import TestbedSettings, name_problem
from optseq.state.sha import hex_digest

ENV = "OPTSEQ_TESTBED"
PART_ORDER = ("host", "cpu", "gpu", "os")


def local(settings: TestbedSettings | None = None) -> dict:
    """{id, name, parts} of this process: its name from OPTSEQ_TESTBED, else the plan's `[testbed] name`, else
    the fingerprint's id. InputError (one line) for an OPTSEQ_TESTBED that is no testbed name."""
    parts = machine_parts()
    found = {"id": fingerprint_id(parts), "parts": parts}
    named = os.environ.get(ENV)
    if named is not None and named != "":
        problem = name_problem(named)
        if problem:
            raise InputError(f"{ENV}: {problem}")
        return {"id": found["id"], "name": named, "parts": parts}
    name = settings.name if settings is not None and settings.name else found["id"]
    return {"id": found["id"], "name": name, "parts": parts}


def on_node() -> dict:
    """{id, name, parts} of a cluster's node, as the node sees itself: its fingerprint, named by the node's own
    OPTSEQ_TESTBED where that is a testbed name (a plan's `[testbed] name` names the launching checkout's machine)."""
    parts = machine_parts()
    found = fingerprint_id(parts)
    named = os.environ.get(ENV)
    return {"id": found, "name": named if named and name_problem(named) is None else found, "parts": parts}


def parts_text(parts: dict | None) -> str:
    """`gpu01 · AMD EPYC 7763 × 128 · NVIDIA H100 80GB HBM3 × 8 · Linux 6`."""
    found = parts or {}
    return " · ".join(str(found[k]) for k in PART_ORDER if found.get(k))


def text(testbed: dict | None) -> str:
    """`gpu-box (gpu01-3f9a2c: gpu01 · … · Linux 6)`; the id alone is not repeated when it is the name."""
    if not testbed:
        return "unknown (recorded before runs carried their testbed)"
    what = parts_text(testbed.get("parts"))
    if testbed.get("id") and testbed.get("id") != testbed.get("name"):
        what = f"{testbed['id']}: {what}" if what else testbed["id"]
    return f"{testbed.get('name')} ({what})" if what else str(testbed.get("name"))


def fingerprint_id(parts: dict) -> str:
    digest = hex_digest("\n".join(f"{k}={parts.get(k) or ''}" for k in PART_ORDER))
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(parts.get("host") or "host"))[:40] or "host"
    return f"{host}-{digest[:6]}"


@functools.lru_cache(maxsize=1)
def machine_parts() -> dict:
    """The fingerprint's parts, read once per process."""
    # the kernel's node name, what socket.gethostname() says on Linux, without importing socket on `status`'s path
    parts = {"host": os.uname().nodename.split(".")[0] or "host", "cpu": _cpu()}
    gpu = _gpus()
    if gpu:
        parts["gpu"] = gpu
    release = platform.release().split(".")[0]
    parts["os"] = f"{platform.system() or 'unknown'} {release}".strip()
    return parts


def _cpu() -> str:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                model = " ".join(value.split())
                break
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or "cpu"
    return f"{model} × {os.cpu_count() or 1}"


def _gpus() -> str | None:
    """The NVIDIA driver's own list (/proc/driver/nvidia/gpus/*/information): the models and how many, no
    nvidia-smi nor torch to start."""
    models: list[str] = []
    try:
        boards = sorted(Path("/proc/driver/nvidia/gpus").iterdir())
    except OSError:
        return None
    for board in boards:
        try:
            for line in (board / "information").read_text(errors="replace").splitlines():
                key, _, value = line.partition(":")
                if key.strip() == "Model" and value.strip():
                    models.append(" ".join(value.split()))
                    break
        except OSError:
            continue
    if not models:
        return None
    return ", ".join(f"{m} × {models.count(m)}" for m in dict.fromkeys(models))


if __name__ == "__main__":
    # a Ray job's first line (state/runners/ray_jobs.py): the testbed of the node that measures, as an env event
    print(json.dumps({"event": "env", "testbed": on_node()}), flush=True)
