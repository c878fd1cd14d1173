"""The lever lifecycle on `transitions`, built from the plan; records are replayed onto it in order."""
from __future__ import annotations

from dataclasses import dataclass, field

from transitions import Machine, MachineError

from state import gates
from state.plan import KINDS, Lever, Plan

STATES = ["unplanned", "blocked", "ready", "running", "measured",
          "adopted", "rejected", "deferred", "decided", "stale", "closed"]
DECIDED = ["adopted", "rejected", "deferred", "decided"]
RUNNABLE = ["ready", "measured", "stale", "adopted", "rejected", "deferred"]
"""States a run may start from; a run from a decided state re-measures it."""
DECIDABLE = ["blocked", "unplanned", "ready", "measured", "stale", "adopted", "rejected", "deferred", "decided"]
OUTCOME_TRIGGER = {"adopt": "adopt", "reject": "reject", "defer": "defer"}
"""Outcomes with their own state; every other outcome (GO, NO-GO, a config) ends in `decided`."""

TRANSITIONS = [
    {"trigger": "gates_met", "source": "blocked", "dest": "unplanned", "conditions": "needs_plan"},
    {"trigger": "gates_met", "source": "blocked", "dest": "ready"},
    {"trigger": "gates_lost", "source": ["ready", "unplanned"], "dest": "blocked"},
    {"trigger": "plan_written", "source": "unplanned", "dest": "ready"},
    {"trigger": "start", "source": RUNNABLE, "dest": "running", "before": "remember_origin"},
    {"trigger": "finish", "source": "running", "dest": "measured"},
    {"trigger": "adopt", "source": DECIDABLE, "dest": "adopted"},
    {"trigger": "reject", "source": DECIDABLE, "dest": "rejected"},
    {"trigger": "defer", "source": DECIDABLE, "dest": "deferred"},
    {"trigger": "decide", "source": DECIDABLE, "dest": "decided"},
    {"trigger": "invalidate", "source": DECIDED, "dest": "stale"},
    {"trigger": "close", "source": ["blocked", "unplanned", "ready"], "dest": "closed"},
] + [
    # a run that ends without a result puts the lever back where it was
    {"trigger": "abort", "source": "running", "dest": origin, "conditions": f"came_from_{origin}"}
    for origin in RUNNABLE
]

MARK = {"adopted": "done", "decided": "done", "rejected": "rejected", "ready": "now", "running": "now",
        "measured": "now", "stale": "now", "blocked": "waiting", "unplanned": "waiting",
        "deferred": "waiting", "closed": "closed"}
"""How the doc marks a state: done ✅, now ⏳, waiting ⏸, rejected ❌, closed —."""


class TransitionRefused(Exception):
    """An action that the lever's current state does not allow; str() is the user's one line."""


@dataclass
class LeverModel:
    """One lever's live state; `transitions` adds `state` and the trigger methods."""

    lever: Lever
    plan_doc: str | None = None
    outcome: str | None = None
    decision_seq: int | None = None
    decision: dict | None = None
    stale_reason: str = ""
    closed_by: str = ""
    origin: str = ""
    results: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(candidate, criterion) -> (pass|fail, evidence)."""

    def needs_plan(self) -> bool:
        return self.plan_doc is None and self.lever.code == "none"

    def remember_origin(self) -> None:
        self.origin = self.state


for _origin in RUNNABLE:
    setattr(LeverModel, f"came_from_{_origin}", lambda self, _o=_origin: self.origin == _o)


class PlanMachine:
    """Every lever's state machine plus the facts, driven by plan priors and stored records."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.facts = {fact.id: fact.value for fact in plan.facts}
        self.models: dict[str, LeverModel] = {}
        for lever in plan.levers:
            model = LeverModel(lever, plan_doc=lever.plan_doc)
            Machine(model=model, states=STATES, transitions=TRANSITIONS, initial="blocked",
                    auto_transitions=False, send_event=False)
            if lever.criteria:
                for cand in lever.criteria.candidates:
                    for crit, outcome in cand.results.items():
                        model.results[(cand.id, crit)] = (outcome, "recorded in the plan")
            self.models[lever.id] = model
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
                             state_of=self.state)

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

    def next(self) -> str | None:
        ready = [m.lever for m in self.models.values() if m.state in ("ready", "stale")]
        ready.sort(key=lambda lever: (KINDS.index(lever.kind), lever.index))
        return ready[0].id if ready else None

    def ready_in_order(self) -> list[str]:
        ready = [m.lever for m in self.models.values() if m.state in ("ready", "stale")]
        ready.sort(key=lambda lever: (KINDS.index(lever.kind), lever.index))
        return [lever.id for lever in ready]

    def infra(self) -> dict:
        """The current stack: adopted levers and the chosen model config."""
        adopted = sorted(lid for lid, m in self.models.items() if m.outcome == "adopt")
        model_cfg: dict = {}
        for m in self.models.values():
            if m.lever.kind == "experiment" and m.outcome not in (None, "defer") and m.decision:
                model_cfg = dict(m.decision.get("config") or {"name": m.outcome})
        return {"adopted": adopted, "model": model_cfg}

    # -- records --------------------------------------------------------------------------------
    def apply(self, table: str, record: dict) -> list[str]:
        """Replay one stored record; returns the ids of levers whose decision went stale."""
        if table == "facts":
            self.facts[record["name"]] = bool(record["value"])
        elif table == "criteria":
            model = self.models[record["lever"]]
            model.results[(record["candidate"], record["criterion"])] = (record["outcome"],
                                                                        record.get("evidence", ""))
        elif table == "decisions":
            return self._decide(record["lever"], record["outcome"], record["seq"], record)
        elif table == "runs":
            self._run(record)
        elif table == "events":
            self._event(record)
        self.refresh()
        return []

    def _event(self, record: dict) -> None:
        kind = record.get("type")
        model = self.models.get(record.get("lever", ""))
        if kind == "plan" and model is not None:
            model.plan_doc = record["path"]
            if model.state == "unplanned":
                model.plan_written()
        elif kind == "stale" and model is not None and model.state in DECIDED:
            model.stale_reason = record.get("reason", "")
            model.invalidate()

    def _run(self, record: dict) -> None:
        model = self.models[record["lever"]]
        if model.state not in RUNNABLE:
            return  # a run of a lever whose state moved on (e.g. closed) stays in history only
        model.start()
        status = record.get("status")
        if status == "succeeded":
            model.finish()
        elif status != "running" and status != "queued":
            model.abort()

    def run_ended(self, lever_id: str, status: str) -> None:
        """A live run finished: the same move its final record makes on replay."""
        model = self.models[lever_id]
        if model.state != "running":
            return
        if status == "succeeded":
            model.finish()
        else:
            model.abort()
        self.refresh()

    def _decide(self, lever_id: str, outcome: str, seq: int, record: dict) -> list[str]:
        model = self.models[lever_id]
        trigger = OUTCOME_TRIGGER.get(outcome, "decide")
        if model.state == "running":
            model.abort()
        if model.state == "closed":
            return []
        getattr(model, trigger)()
        model.outcome, model.decision_seq, model.decision = outcome, seq, record
        model.stale_reason = ""
        went_stale = []
        for other in self.models.values():
            if (lever_id in other.lever.remeasure_when and other.state in DECIDED
                    and other.decision_seq is not None and other.decision_seq < seq and other.lever.run):
                other.stale_reason = f"{lever_id} decided {outcome} after {other.lever.id} was measured"
                other.invalidate()
                went_stale.append(other.lever.id)
        branch = model.lever.criteria.branch(outcome) if model.lever.criteria else None
        for closed in branch.closes if branch else ():
            target = self.models[closed]
            if target.state in ("blocked", "unplanned", "ready"):
                target.closed_by = f"{lever_id} decided {outcome}"
                target.close()
        self.refresh()
        return went_stale

    def refresh(self) -> None:
        """Move levers across their gates until nothing changes (a fact or decision may cascade)."""
        ctx = self.context()
        changed = True
        while changed:
            changed = False
            for model in self.models.values():
                met = gates.holds(model.lever.requires, ctx)
                if model.state == "blocked" and met:
                    model.gates_met()
                    changed = True
                elif model.state in ("ready", "unplanned") and not met:
                    model.gates_lost()
                    changed = True

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
        if model.state not in RUNNABLE:
            why = "; ".join(self.why_blocked(lever_id)) or f"it is {model.state}"
            raise TransitionRefused(f"{lever_id} is {model.state}: {why}")


__all__ = ["PlanMachine", "LeverModel", "TransitionRefused", "MachineError", "STATES", "DECIDED", "MARK"]
