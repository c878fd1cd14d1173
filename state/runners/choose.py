"""Which runner this process sends lever runs to: the command line, then the environment, then the plan, then local."""
from __future__ import annotations

import os
from collections.abc import Mapping

from optseq.state.plan.runner import RUNNERS, RunnerConfig
from optseq.state.runners.interface import RunnerError

ADDRESS_ENV = "OPTSEQ_RAY_ADDRESS"
RUNNER_ENV = "OPTSEQ_RUNNER"


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
