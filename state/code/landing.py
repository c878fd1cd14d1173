"""What a branch lever's code did since its run, as the records that say so: `landed` (its adopted commit is in
the baseline's history now, at the merge that brought it), `unlanded` (no longer: a reset, another checkout) and
`stale` (its branch moved, or, where the plan says code changes make numbers stale, its base moved).

The sequencer appends them when it opens the store to write (and after a run), so the lever machine stays a
replay of records: every process that reads the store sees the same landing, whatever git says to it now.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optseq.state.code import branch
from optseq.state.code import git as g
from optseq.state.code.words import WORDS
from optseq.state.said import say, text

MEASURED = ("adopted", "rejected", "deferred", "decided", "measured")
"""States whose numbers stand on a run (the machine's DECIDED and measured)."""


def events(machine, plan) -> list[dict]:
    """The landed / unlanded / stale events the branch levers' code calls for now (none twice: each follows the
    machine's state, which the previous one changed)."""
    found = []
    for lever in plan.levers:
        arms = lever.arms
        model = machine.models.get(lever.id)
        if arms is None or not arms.branch or model is None or model.state not in (*MEASURED, "stale"):
            continue
        run_id, code = evidence(machine, lever.id)
        if code is None:
            continue
        moved = branch.moves(code, arms.baseline_ref, arms.candidate_ref)
        if moved is None:
            continue  # no repository or no git here: nothing can be said, and nothing is guessed
        base = arms.baseline_ref or "HEAD"
        commit = code["candidate"]["commit"]
        if model.outcome == "adopt" and not model.landed and moved.landed:
            found.append({"type": "landed", "lever": lever.id, "commit": commit, "since": moved.landed,
                          "base": base, "run": run_id})
            continue
        if model.landed and not still_in(code["repo"], model.landed.since, moved.baseline_now):
            found.append({"type": "unlanded", "lever": lever.id, "commit": commit, "base": base, "run": run_id})
            continue
        if model.landed or moved.landed or model.state == "stale":
            continue  # landed code is the baseline's now: where its branch goes next is other work
        said = branch.moved_said(arms.candidate_ref, run_id, commit, moved.candidate_now, moved.candidate_ahead)
        if said is None and plan.code_changes == "stale":
            said = base_moved(base, run_id, code["baseline"]["commit"], moved)
        if said:
            found.append({"type": "stale", "lever": lever.id, "reason": text(said, "en", WORDS), "said": said,
                          "run": run_id})
    return found


def still_in(root: str, since: str | None, base_now: str | None) -> bool:
    """Whether the commit a lever landed at (its merge, or a squash commit marked by hand) is in the baseline still."""
    if not base_now or not since:
        return False
    try:
        return g.is_ancestor(root, since, base_now)
    except g.GitError:
        return True  # git cannot say (the commit is gone from this clone): nothing is taken back on a guess


def evidence(machine, lever_id: str) -> tuple[int | None, dict | None]:
    """The run a branch lever's numbers stand on and the commits it recorded; for an adopt made by hand with no run
    behind it, the commits its refs name now."""
    model = machine.models[lever_id]
    runs = (model.decision.runs if model.decision else None) or (
        [model.last_run.id] if model.state == "measured" and model.last_run and model.last_run.id is not None else [])
    for run_id in runs:
        code = code_in(machine.runs.fingerprint(run_id), lever_id)
        if code is not None:
            return run_id, code
    arms = model.lever.arms
    if model.outcome != "adopt" or runs:
        return None, None
    root = g.toplevel(arms.cwd)
    try:
        base, cand = (g.resolve(root, arms.baseline_ref or "HEAD"), g.resolve(root, arms.candidate_ref)) if root \
            else (None, None)
    except g.GitError:
        return None, None
    if not base or not cand:
        return None, None
    return None, {"repo": str(root), "rel": ".", "baseline": {"ref": arms.baseline_ref or "HEAD", "commit": base},
                  "candidate": {"ref": arms.candidate_ref, "commit": cand}}


def code_in(fingerprint: Mapping[str, Any], lever_id: str) -> dict | None:
    """The commits a run measured for a branch lever, as Commits.to_dict keeps them: a lever's run records its own
    (`code`), a screen each of its branch levers' (`codes`, by lever: its candidate and the screen's baseline)."""
    code = fingerprint.get("code") or (fingerprint.get("codes") or {}).get(lever_id)
    return code if isinstance(code, dict) else None


def base_moved(base: str, run_id, old: str, moved: "branch.Moves") -> dict | None:
    """`the baseline moved: HEAD moved 4 commits since run 7 (a1b2c3d → 9f8e7d6)` (a said): the baseline the run
    measured against is not the baseline now."""
    if moved.baseline_now is None or moved.baseline_now == old:
        return None
    said = branch.moved_said(base, run_id, old, moved.baseline_now, moved.baseline_ahead)
    return say("base_moved", moved=said) if said else None


def landed_text(landed: dict | None) -> str | None:
    """`in the code since e4f5a6b`."""
    if not landed:
        return None
    return f"in the code since {g.short(landed.get('since'))}"
