"""The lever lifecycle on `transitions`, built from the plan; records are replayed onto it in order.

Everything here is a function of the records in `seq` order, so a fresh replay reaches the same states:
a reversed gate closes and reopens branches, a lever that leaves the stack (closed branch, inconclusive
re-measure, a new outcome) makes what was measured with it stale, and an `unavailable` run is remembered
until the device changes. What those moves derive (stale, superseded) is handed back for the store's history.
"""
from __future__ import annotations

from collections.abc import Callable

from optseq.state.plan import gates
from optseq.state.plan.definition import definition
from optseq.state.plan.model import KINDS, Plan
from optseq.state.lifecycle.moves import RecordMoves
from optseq.state.lifecycle.run_index import RunIndex
from optseq.state.lifecycle.states import RUNNABLE, LeverModel, TransitionRefused


class PlanMachine(RecordMoves):
    """Every lever's state machine plus the facts, driven by plan priors and stored records."""

    def __init__(self, plan: Plan, settle: bool = True):
        """`settle`: decide the plan's priors and move every lever across its gates; a snapshot about to set
        every lever's state and fields (snapshot.load) skips it, so that reading one moves no machine."""
        self.plan = plan
        self.facts = {fact.id: fact.value for fact in plan.facts}
        self.models: dict[str, LeverModel] = {}
        self.runs = RunIndex()
        """What the runs left: the stack each evidence run was measured on (who goes stale when a lever
        leaves the stack), each lever's latest runs, the newest code hash."""
        self.fired: dict[str, str] = {}
        """decision point id -> when it fired."""
        self.last_device: str | None = None
        self.effects: list[dict] = []
        """Derived events of the record being applied (stale, superseded), for the store to keep."""
        self.depends = _depends(plan)
        self.cannot_run: Callable[[str], str | None] | None = None
        """lever id -> why it cannot run though ready (a branch merged before it ran), or None: git's answer, which
        the sequencer gives (Sequencer.cannot_run); `next` and the group runs skip such a lever."""
        self.definitions = {lever.id: definition(lever, plan.path) for lever in plan.levers}
        """What each lever is now, part by part: a number measured on another definition is stale."""
        for lever in plan.levers:
            model = LeverModel(lever, plan_doc=lever.plan_doc)  # blocked; its machine comes with its first move
            if lever.criteria:
                for cand in lever.criteria.candidates:
                    for crit, outcome in cand.results.items():
                        model.results[(cand.id, crit)] = (outcome, "recorded in the plan")
            self.models[lever.id] = model
        if not settle:
            return
        for lever in plan.levers:
            if lever.prior:
                self._decide(lever.id, lever.prior.outcome, seq=0, record={"source": "plan", "auto": False,
                                                                          "why": lever.prior.note})
        self.refresh()

    # -- queries ------------------------------------------------------------------------------
    def state(self, lever_id: str) -> str:
        return self.models[lever_id].state

    def context(self) -> gates.Context:
        return gates.Context(outcome_of=lambda l: self.models[l].outcome,
                             fact_of=lambda f: bool(self.facts.get(f)),
                             state_of=self.state, pending_of=self.pending)

    def branch_code(self, lever_id: str) -> dict | None:
        """The commits a branch lever's standing decision (or, measured, its last run) was measured on: the `code`
        its evidence run recorded; None for other levers and a decision no run of it backs."""
        model = self.models[lever_id]
        if model.lever.arms is None or not model.lever.arms.branch:
            return None
        runs = (model.decision or {}).get("runs") or ([model.last_run["id"]] if model.state == "measured"
                                                      and model.last_run else [])
        for run_id in runs:
            code = self.runs.fingerprint(run_id).get("code")
            if isinstance(code, dict):
                return code
        return None

    def unmerged(self, lever_id: str) -> dict | None:
        """{ref, commit} of an adopted branch lever whose commit is not in the baseline's history yet (commit None
        when no run of it recorded one); None for every other lever."""
        model = self.models[lever_id]
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
        return self.models[lever_id].outcome == "adopt" and self.unmerged(lever_id) is None

    def why_blocked(self, lever_id: str) -> list[str]:
        model = self.models[lever_id]
        if model.state == "blocked":
            reasons = gates.unmet(model.lever.requires, self.context())
            if model.needs_plan():
                reasons.append(f"plan not written (optseq plan {lever_id} PATH)")
            return reasons
        if model.state == "unplanned":
            return [f"plan not written (optseq plan {lever_id} PATH)"]
        if model.state == "closed":
            return [f"closed: {model.closed_by}"]
        return []

    def candidate_status(self, lever_id: str, candidate) -> str:
        """`pass` (every criterion passed), `fail` (one failed or the plan says so) or `pending`."""
        model = self.models[lever_id]
        if candidate.verdict == "fail":
            return "fail"
        outcomes = [model.results.get((candidate.id, c.id), ("pending", ""))[0]
                    for c in model.lever.criteria.criteria]
        if "fail" in outcomes:
            return "fail"
        return "pass" if all(o == "pass" for o in outcomes) else "pending"

    def criteria_verdict(self, lever_id: str) -> str | None:
        """GO when one candidate passes all criteria, NO-GO when every candidate failed."""
        lever = self.models[lever_id].lever
        statuses = [self.candidate_status(lever_id, c) for c in lever.criteria.candidates]
        if "pass" in statuses:
            return "GO"
        if all(s == "fail" for s in statuses):
            return "NO-GO"
        return None

    def ready_in_order(self) -> list[str]:
        return self.in_order(lid for lid, m in self.models.items() if m.state in ("ready", "stale"))

    def in_order(self, lever_ids) -> list[str]:
        """Dependency order: a lever after every lever among `lever_ids` that it depends on, even through
        levers outside them (re-measuring those first would make it stale again); then kind, plan order."""
        remaining = set(lever_ids)
        out: list[str] = []
        key = lambda lid: (KINDS.index(self.models[lid].lever.kind), self.models[lid].lever.index)  # noqa: E731
        while remaining:
            free = [lid for lid in remaining if not (self.depends[lid] - {lid}) & remaining]
            pick = min(free or remaining, key=key)  # a remeasure_when cycle: fall back to kind and plan order
            out.append(pick)
            remaining.discard(pick)
        return out

    def runnable(self, states=("ready", "stale")) -> list[str]:
        """Levers a group run (`next`, `ready`, `stale`) may start, in dependency order: in one of `states`,
        with a run command, gates holding, and not unavailable on this device."""
        ctx = self.context()
        return self.in_order(lid for lid, m in self.models.items()
                             if m.state in states and m.lever.run and m.unavailable is None
                             and gates.holds(m.lever.requires, ctx)
                             and not (self.cannot_run and self.cannot_run(lid)))

    def next(self) -> str | None:
        """What is next, the one answer of every view (status and its --json, the console's status line and `n`,
        `--run next`, the export's "(next)"): the first lever that can run, in dependency order; None when only
        the user can move the plan on, and then the to-do (Sequencer.todo) says how."""
        levers = self.runnable()
        return levers[0] if levers else None

    def adoption_order(self) -> list[str]:
        """The adopted levers in the order they were adopted (the plan's own adoptions first, in plan order)."""
        adopted = [m for m in self.models.values() if m.outcome == "adopt"]
        return [m.lever.id for m in sorted(adopted, key=lambda m: (m.decision_seq or 0, m.lever.index))]

    def stack_order(self) -> list[str]:
        """The levers in the stack, in adoption order: the adopted ones but an unmerged branch."""
        return [lid for lid in self.adoption_order() if self.in_stack(lid)]

    def infra(self) -> dict:
        """The current stack: adopted levers and the chosen model config."""
        adopted = sorted(lid for lid in self.models if self.in_stack(lid))
        source = self._model_source()
        model_cfg: dict = {}
        if source:
            m = self.models[source]
            model_cfg = dict(m.decision.get("config") or {"name": m.outcome})
        return {"adopted": adopted, "model": model_cfg}

    # -- live checks --------------------------------------------------------------------------------
    def check_decidable(self, lever_id: str, outcome: str) -> None:
        model = self.models[lever_id]
        lever = model.lever
        if model.state == "running":
            raise TransitionRefused(f"{lever_id} is running; cancel the run before deciding it")
        if model.state == "closed":
            raise TransitionRefused(f"{lever_id} is closed ({model.closed_by})")
        if lever.kind == "experiment" and not lever.outcomes[:-1]:
            if outcome != "defer" and not all(c.isalnum() or c in "_-.x" for c in outcome):
                raise TransitionRefused(f"{lever_id}: not a config name: {outcome!r}")
        elif outcome not in lever.outcomes:
            raise TransitionRefused(f"{lever_id}: unknown outcome {outcome!r} for a {lever.kind} lever "
                                    f"(one of {', '.join(lever.outcomes)})")

    def check_runnable(self, lever_id: str) -> None:
        model = self.models[lever_id]
        if not model.lever.run:
            if model.lever.criteria:
                raise TransitionRefused(f"{lever_id} is a decision lever without a run command: record its "
                                        f"criteria (optseq record {lever_id} CANDIDATE CRITERION pass|fail)")
            raise TransitionRefused(f"{lever_id} has no run command in the plan")
        if model.state == "closed":
            raise TransitionRefused(f"{lever_id} is closed: {model.closed_by}")
        if model.state not in RUNNABLE:
            why = "; ".join(self.why_blocked(lever_id)) or f"it is {model.state}"
            raise TransitionRefused(f"{lever_id} is {model.state}: {why}")


def _depends(plan: Plan) -> dict[str, set[str]]:
    """lever -> every lever it depends on, transitively: its gates' levers and its remeasure_when."""
    direct = {lever.id: {a.lever for a in gates.atoms(lever.requires) if a.lever} | set(lever.remeasure_when)
              for lever in plan.levers}
    closure: dict[str, set[str]] = {}
    for lid in direct:
        seen: set[str] = set()
        todo = list(direct[lid])
        while todo:
            dep = todo.pop()
            if dep in seen or dep not in direct:
                continue
            seen.add(dep)
            todo.extend(direct[dep])
        closure[lid] = seen
    return closure


__all__ = ["PlanMachine"]
