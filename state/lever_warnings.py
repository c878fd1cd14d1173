"""What `status` and the console warn of on a decided lever: a stack it cannot join, evidence from older code,
figures from the reference workload at CI size."""
from __future__ import annotations

from optseq.state.lifecycle.run_index import KeptRun, RunIndex, workload
from optseq.state.lifecycle.states import LeverModel
from optseq.state.record_types import Decision
from optseq.state.runs.measured_on import at_ci_size


def outside_stack(model: LeverModel) -> list[str]:
    """A lever written as two whole commands is measured, never composed: said before it is adopted, too."""
    arms = model.lever.arms
    if arms is None or arms.composes:
        return []
    if model.outcome == "adopt":
        return ["adopted, but its two whole commands cannot join the stack: later levers run without it"]
    return ["two whole commands: adopted, it cannot join the stack (write it as candidate_args or candidate_env)"]


def code_warnings(decision: Decision | None, runs: RunIndex) -> list[str]:
    """A workload whose code changed since the evidence run is worth a look, not a re-measure."""
    for run_id in (decision.runs if decision else None) or []:
        fingerprint = runs.fingerprint(run_id)
        measured, latest_code = fingerprint.get("code_hash"), runs.latest_code.get(workload(fingerprint))
        if measured and latest_code and measured != latest_code:
            return [f"workload code changed since run {run_id} (code hash {measured} → {latest_code})"]
    return []


def size_warnings(model: LeverModel) -> list[str]:
    """A figure from the reference workload at CI size stands where the plan's figure stood: say so."""
    stats = model.decision.stats if model.decision else None
    if at_ci_size(stats):
        return ["figures from the reference workload at CI size, not the plan's workload (--size gpu in its run "
                "measures the seed's size)"]
    return []


def left_running(run: KeptRun | None) -> list[str]:
    """The latest run's launches left processes running, which optseq stopped: the lever's bench leaks them."""
    count = run.left_running if run is not None else None
    if run is None or count is None or count <= 0:
        return []
    return [f"run {run.id} stopped {count} process{'es' * (count != 1)} its launches left running "
            f"(optseq runs names them)"]
