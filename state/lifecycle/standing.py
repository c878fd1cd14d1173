"""Where the levers stand, read off the machine's board: each lever's state and gates, the stack, what runs next, and
whether an action is allowed now. Reading moves nothing."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from optseq.state.kinds import LeverState
from optseq.state.plan import gates
from optseq.state.plan.model import KINDS, Candidate
from optseq.state.lifecycle.board import Board
from optseq.state.lifecycle.states import RUNNABLE, TransitionRefused

_GROUP = (LeverState.READY, LeverState.STALE)
"""The states a group run (`next`, `ready`, `stale`) starts a lever from, unless told others."""


class Standing:
    """The queries every view asks of the lever machine (status, the console, the export, the sequencer's checks)."""

    def __init__(self, board: Board) -> None:
        self.board = board

    def state(self, lever_id: str) -> str:
        return self.board.models[lever_id].state

    def context(self) -> gates.Context:
        models, facts = self.board.models, self.board.facts
        return gates.Context(outcome_of=lambda l: models[l].outcome, fact_of=lambda f: bool(facts.get(f)),
                             state_of=self.state, pending_of=self.pending)

    def evidence(self, lever_id: str) -> list[int]:
        """The runs a lever's numbers rest on: its standing decision's, or a measured lever's last run."""
        model = self.board.models[lever_id]
        runs = model.decision.runs if model.decision else None
        if runs:
            return list(runs)
        if model.state == LeverState.MEASURED and model.last_run and model.last_run.id is not None:
            return [model.last_run.id]
        return []

    def branch_code(self, lever_id: str) -> dict[str, Any] | None:
        """The commits a branch lever's standing decision (or, measured, its last run) was measured on: the `code`
        its evidence run recorded; None for other levers and a decision no run of it backs."""
        model = self.board.models[lever_id]
        if model.lever.arms is None or not model.lever.arms.branch:
            return None
        for run_id in self.evidence(lever_id):
            # a lever's run keeps its commits as `code`, a screen each branch lever's under `codes` (as
            # state/code/landing.py's code_in reads them; the code room is no room this one imports)
            found = self.board.runs.fingerprint(run_id)
            code = found.get("code") or (found.get("codes") or {}).get(lever_id)
            if isinstance(code, dict):
                return code
        return None

    def unmerged(self, lever_id: str) -> dict[str, Any] | None:
        """{ref, commit} of an adopted branch lever whose commit is not in the baseline's history yet (commit None
        when no run of it recorded one); None for every other lever."""
        model = self.board.models[lever_id]
        arms = model.lever.arms
        if arms is None or not arms.branch or model.outcome != "adopt" or model.landed:
            return None
        code = self.branch_code(lever_id) or {}
        return {"ref": arms.candidate_ref, "commit": (code.get("candidate") or {}).get("commit")}

    def pending(self, lever_id: str) -> str | None:
        """`adopted — merge option-b (a1b2c3d) to put it in the stack` while an adopted branch is unmerged."""
        found = self.unmerged(lever_id)
        if found is None:
            return None
        commit = f" ({str(found['commit'])[:7]})" if found.get("commit") else ""
        return f"adopted — merge {found['ref']}{commit} to put it in the stack"

    def in_stack(self, lever_id: str) -> bool:
        """Adopted, and in effect: an adopted branch lever is in the stack only once its commit is merged."""
        return self.board.models[lever_id].outcome == "adopt" and self.unmerged(lever_id) is None

    def why_blocked(self, lever_id: str) -> list[str]:
        model = self.board.models[lever_id]
        if model.state == LeverState.BLOCKED:
            reasons = gates.unmet(model.lever.requires, self.context())
            if model.needs_plan():
                reasons.append(f"plan not written (optseq plan {lever_id} PATH)")
            return reasons
        if model.state == LeverState.UNPLANNED:
            return [f"plan not written (optseq plan {lever_id} PATH)"]
        if model.state == LeverState.CLOSED:
            return [f"closed: {model.closed_by}"]
        return []

    def candidate_status(self, lever_id: str, candidate: Candidate) -> str:
        """`pass` (every criterion passed), `fail` (one failed or the plan says so) or `pending`."""
        model = self.board.models[lever_id]
        if candidate.verdict == "fail":
            return "fail"
        criteria = model.lever.criteria.criteria if model.lever.criteria else ()
        outcomes = [model.results.get((candidate.id, c.id), ("pending", ""))[0] for c in criteria]
        if "fail" in outcomes:
            return "fail"
        return "pass" if all(o == "pass" for o in outcomes) else "pending"

    def criteria_verdict(self, lever_id: str) -> str | None:
        """GO when one candidate passes all criteria, NO-GO when every candidate failed."""
        criteria = self.board.models[lever_id].lever.criteria
        statuses = [self.candidate_status(lever_id, c) for c in (criteria.candidates if criteria else ())]
        if "pass" in statuses:
            return "GO"
        if all(s == "fail" for s in statuses):
            return "NO-GO"
        return None

    def ready_in_order(self) -> list[str]:
        return self.in_order(lid for lid, m in self.board.models.items() if m.state in _GROUP)

    def in_order(self, lever_ids: Iterable[str]) -> list[str]:
        """Dependency order: a lever after every lever among `lever_ids` that it depends on, even through
        levers outside them (re-measuring those first would make it stale again); then kind, plan order."""
        models, depends = self.board.models, self.board.depends
        remaining = set(lever_ids)
        out: list[str] = []

        def key(lid: str) -> tuple[int, int]:
            return KINDS.index(models[lid].lever.kind), models[lid].lever.index

        while remaining:
            free = [lid for lid in remaining if not (depends[lid] - {lid}) & remaining]
            pick = min(free or remaining, key=key)  # a remeasure_when cycle: fall back to kind and plan order
            out.append(pick)
            remaining.discard(pick)
        return out

    def runnable(self, states: Iterable[str] = _GROUP) -> list[str]:
        """Levers a group run (`next`, `ready`, `stale`) may start, in dependency order: in one of `states`,
        with a run command, gates holding, and not unavailable on this device."""
        ctx, held, wanted = self.context(), self.board.cannot_run, set(states)
        return self.in_order(lid for lid, m in self.board.models.items()
                             if m.state in wanted and m.lever.run and m.unavailable is None
                             and gates.holds(m.lever.requires, ctx) and not (held and held(lid)))

    def next(self) -> str | None:
        """What is next, the one answer of every view (status and its --json, the console's status line and `n`,
        `--run next`, the export's "(next)"): the first lever that can run, in dependency order; None when only
        the user can move the plan on, and then the to-do (ReadViews.todo) says how."""
        levers = self.runnable()
        return levers[0] if levers else None

    def adoption_order(self) -> list[str]:
        """The adopted levers in the order they were adopted (the plan's own adoptions first, in plan order)."""
        adopted = [m for m in self.board.models.values() if m.outcome == "adopt"]
        return [m.lever.id for m in sorted(adopted, key=lambda m: (m.decision_seq or 0, m.lever.index))]

    def stack_order(self) -> list[str]:
        """The levers in the stack, in adoption order: the adopted ones but an unmerged branch."""
        return [lid for lid in self.adoption_order() if self.in_stack(lid)]

    def model_source(self) -> str | None:
        """The experiment whose chosen config is the model of the stack (the last decided one in plan order)."""
        source = None
        for lid, m in self.board.models.items():
            if m.lever.kind == "experiment" and m.outcome not in (None, "defer") and m.decision:
                source = lid
        return source

    def stack(self) -> dict[str, str]:
        """lever -> outcome of every lever in the stack (the adopted ones and the model's experiment)."""
        stack = {lid: "adopt" for lid in self.board.models if self.in_stack(lid)}
        source = self.model_source()
        outcome = self.board.models[source].outcome if source else None
        if source and outcome:
            stack[source] = outcome
        return stack

    def infra(self) -> dict[str, Any]:
        """The current stack: adopted levers and the chosen model config."""
        adopted = sorted(lid for lid in self.board.models if self.in_stack(lid))
        source = self.model_source()
        model_cfg: dict[str, Any] = {}
        if source:
            m = self.board.models[source]
            model_cfg = dict((m.decision.config if m.decision else None) or {"name": m.outcome})
        return {"adopted": adopted, "model": model_cfg}

    # -- whether an action is allowed now ------------------------------------------------------------------------
    def check_decidable(self, lever_id: str, outcome: str) -> None:
        model = self.board.models[lever_id]
        lever = model.lever
        if model.state == LeverState.RUNNING:
            raise TransitionRefused(f"{lever_id} is running; cancel the run before deciding it")
        if model.state == LeverState.CLOSED:
            raise TransitionRefused(f"{lever_id} is closed ({model.closed_by})")
        if lever.kind == "experiment" and not lever.outcomes[:-1]:
            if outcome != "defer" and not all(c.isalnum() or c in "_-.x" for c in outcome):
                raise TransitionRefused(f"{lever_id}: not a config name: {outcome!r}")
        elif outcome not in lever.outcomes:
            raise TransitionRefused(f"{lever_id}: unknown outcome {outcome!r} for a {lever.kind} lever "
                                    f"(one of {', '.join(lever.outcomes)})")

    def check_runnable(self, lever_id: str) -> None:
        model = self.board.models[lever_id]
        if not model.lever.run:
            if model.lever.criteria:
                raise TransitionRefused(f"{lever_id} is a decision lever without a run command: record its "
                                        f"criteria (optseq record {lever_id} CANDIDATE CRITERION pass|fail)")
            raise TransitionRefused(f"{lever_id} has no run command in the plan")
        if model.state == LeverState.CLOSED:
            raise TransitionRefused(f"{lever_id} is closed: {model.closed_by}")
        if model.state not in RUNNABLE:
            why = "; ".join(self.why_blocked(lever_id)) or f"it is {model.state}"
            raise TransitionRefused(f"{lever_id} is {model.state}: {why}")
