"""The plan's `[runner]` table and a lever's `resources`: where its runs go, and what each asks a cluster for.

```toml
[runner]
kind = "ray"                         # or "local" (the default); --runner on the command line wins
address = "http://head:8265"         # the cluster's job API; --ray-address / $OPTSEQ_RAY_ADDRESS win
python = "/opt/venv/bin/python"      # the nodes' interpreter for a command starting with "python"
one_per_node = true                  # one benchmark per node at a time (the optseq_bench resource)
forward_env = ["HF_HOME"]            # variables copied from optseq's environment into every job's

[[levers]]
resources = { gpus = 1 }             # whole GPUs only: a shared device spoils the timing
```
"""
from __future__ import annotations

import msgspec

RUNNERS = ("local", "ray")


class RunnerConfig(msgspec.Struct, frozen=True):
    """The plan's `[runner]` table, overridden by --runner / --ray-address / $OPTSEQ_RAY_ADDRESS."""

    kind: str = "local"
    address: str | None = None
    """Ray: the cluster's job API (its dashboard), e.g. http://head:8265."""
    python: str | None = None
    """Ray: the interpreter on the nodes for a lever command that starts with "python"; default this one."""
    one_per_node: bool = True
    """Ray: one benchmark per node at a time, through the custom resource `optseq_bench` every node offers."""
    forward_env: tuple[str, ...] = ()
    """Ray: names of variables copied from optseq's environment into each job's (a job never gets it all)."""


RESOURCE_KEYS = ("gpus", "cpus")
MAX_GPUS = 64


def parse_runner(loader, raw) -> RunnerConfig:
    if not isinstance(raw, dict):
        raise loader.fail("runner", f"expected a [runner] table, got {type(raw).__name__}")
    loader.check_keys(raw, {"kind", "address", "python", "one_per_node", "forward_env"}, "runner")
    kind = loader.get(raw, "kind", "runner", str, "local")
    if kind not in RUNNERS:
        raise loader.fail("runner.kind", f"unknown runner {kind!r} (one of {', '.join(RUNNERS)})")
    address = loader.get(raw, "address", "runner", str, None)
    if address is not None and not address.strip():
        raise loader.fail("runner.address", "empty address (leave it out to give it with --ray-address)")
    return RunnerConfig(kind=kind, address=address, python=loader.get(raw, "python", "runner", str, None),
                        one_per_node=loader.get(raw, "one_per_node", "runner", bool, True),
                        forward_env=loader.strings(raw, "forward_env", "runner"))


def parse_resources(loader, raw, where: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(raw, dict):
        raise loader.fail(where, f"expected a table such as {{ gpus = 1 }}, got {type(raw).__name__}")
    loader.check_keys(raw, set(RESOURCE_KEYS), where)
    found = []
    for key in RESOURCE_KEYS:
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, float):
            raise loader.fail(f"{where}.{key}", f"whole {key} only, got {value} (a fractional GPU shares the "
                                                "device with another job, and the timing with it)")
        value = loader.get(raw, key, where, int)
        if not 0 <= value <= MAX_GPUS:
            raise loader.fail(f"{where}.{key}", f"expected 0 to {MAX_GPUS}, got {value}")
        found.append((key, value))
    return tuple(found)
