"""Where a lever's command runs: here (`local`, the default) or on a Ray cluster (`ray`).

Everything above a runner (the pass loop, statistics, decisions, store, CLI, console) sees one interface:
`runner.launch(spec, run_id=..., attempt=...)` gives a Launch, whose `run(on_event, on_log, on_start)` streams
the command's output through the run protocol and returns a RunOutcome, and whose `cancel()` may come from any
thread. `on_start(fields)` gets what the run record must keep to find the run again (a pid and process group
here; a Ray submission id there).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

RUNNERS = ("local", "ray")
ADDRESS_ENV = "OPTSEQ_RAY_ADDRESS"
RUNNER_ENV = "OPTSEQ_RUNNER"


class RunnerError(Exception):
    """A runner that cannot be set up as asked; str() is the one line shown to the user."""


@dataclass(frozen=True)
class RunnerConfig:
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


def make(config: RunnerConfig):
    if config.kind == "local":
        from optseq.state.runners.local import LocalRunner

        return LocalRunner()
    if config.kind == "ray":
        from optseq.state.runners.ray_jobs import RayRunner

        if not config.address:
            raise RunnerError(f"the ray runner needs the cluster's address: --ray-address ADDR, ${ADDRESS_ENV}, or "
                              "address in the plan's [runner] table (e.g. http://127.0.0.1:8265)")
        return RayRunner(config)
    raise RunnerError(f"unknown runner {config.kind!r} (one of {', '.join(RUNNERS)})")


def configure(plan_config: RunnerConfig | None, kind: str | None = None, address: str | None = None,
              environ: Mapping[str, str] | None = None) -> RunnerConfig:
    """The runner to use: the command line first, then the environment, then the plan, then local."""
    environ = os.environ if environ is None else environ
    base = plan_config or RunnerConfig()
    address = address or environ.get(ADDRESS_ENV) or base.address
    chosen = kind or environ.get(RUNNER_ENV) or base.kind
    return RunnerConfig(kind=chosen, address=address, python=base.python, one_per_node=base.one_per_node,
                        forward_env=base.forward_env)


def store_tag(db: Path) -> str:
    """Tells two stores' run 1 apart on one cluster (a Ray submission id must be unique there)."""
    return hashlib.sha1(f"{os.uname().nodename}:{Path(db).resolve()}".encode()).hexdigest()[:8]
