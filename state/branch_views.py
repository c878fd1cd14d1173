"""What `status`, the console and the export say of a branch lever's code: merged or not, and a baseline that moved
since its run (state/code/ asks git; this turns the answers into a view)."""
from __future__ import annotations

from typing import Any

from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import DECIDED, LeverModel
from optseq.state.plan.model import Plan


def branch_view(plan: Plan, machine: PlanMachine, lever_id: str) -> dict[str, Any] | None:
    """{ref, baseline_ref, commit (measured), state, since, text}; state is `unmerged` (adopted, its commit not in
    the baseline yet), `landed`, or None (not adopted). None for a lever that is not a branch lever."""
    arms = plan.lever(lever_id).arms
    if arms is None or arms.candidate_ref is None:  # not a branch lever
        return None
    model = machine.models[lever_id]
    code = machine.branch_code(lever_id) or {}
    commit = (code.get("candidate") or {}).get("commit")
    state: str | None
    text: str | None
    if model.landed:
        state, text = "landed", f"in the code since {str(model.landed.since)[:7]}"
    elif machine.unmerged(lever_id):
        state, text = "unmerged", machine.pending(lever_id)
    else:
        state, text = None, None
    return {"ref": arms.candidate_ref, "baseline_ref": arms.baseline_ref or "HEAD", "commit": commit,
            "state": state, "since": model.landed.since if model.landed else None,
            "text": text}


def cannot_run(plan: Plan, machine: PlanMachine, lever_id: str, cache: dict[Any, Any]) -> str | None:
    """Why a branch lever that is otherwise ready cannot run: its candidate's commit is in the baseline's history
    already (merged before it ran, or since its run), so nothing of it is left to measure; None while it can run, or
    where git cannot say (a ref that names nothing is refused when the run starts). Git is asked once per `cache`."""
    arms = plan.lever(lever_id).arms
    if arms is None or arms.candidate_ref is None:  # not a branch lever
        return None
    key = ("cannot_run", lever_id, arms.baseline_ref, arms.candidate_ref)
    if key not in cache:
        from optseq.state.code import branch
        from optseq.state.code import git
        from optseq.state.errors import InputError

        try:
            why = branch.inside(branch.resolve(arms.cwd, arms.baseline_ref, arms.candidate_ref, lever_id))
        except (InputError, git.GitError):
            why = None
        ran = machine.runs.latest(lever_id) is not None
        cache[key] = f"merged {'since its run' if ran else 'before it ran'}: {why}" if why else None
    return cache[key]


def cannot_run_todo(lever_id: str, why: str, outcomes: str) -> str:
    """The to-do of a lever that cannot run: only a person can move it on."""
    return (f"{lever_id}: {why}: decide it by hand (optseq decide {lever_id} {outcomes} --why …) or point its "
            "candidate_ref at another ref")


def branch_warnings(plan: Plan, machine: PlanMachine, model: LeverModel, cache: dict[Any, Any]) -> list[str]:
    """Under `code_changes = "warn"`, a branch lever measured against a baseline that has moved since (under
    "stale" the move made it stale instead); git is asked once per `cache`."""
    arms = model.lever.arms
    if arms is None or arms.candidate_ref is None or model.landed or model.state not in (*DECIDED, "measured") \
            or plan.code_changes != "warn":
        return []
    from optseq.state.code import branch, landing
    from optseq.state.code.words import WORDS
    from optseq.state.said import text

    run_id, code = landing.evidence(machine, model.lever.id)
    if code is None:
        return []
    key = ("branch", model.lever.id, run_id)
    if key not in cache:
        cache[key] = branch.moves(code, arms.baseline_ref, arms.candidate_ref)
    moved = cache[key]
    said = landing.base_moved(arms.baseline_ref or "HEAD", run_id, code["baseline"]["commit"], moved) \
        if moved is not None else None
    return [text(said, "en", WORDS)] if said else []
