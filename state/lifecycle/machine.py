"""The lever lifecycle on `transitions`, built from the plan; records are replayed onto it in order.

Everything here is a function of the records in `seq` order, so a fresh replay reaches the same states:
a reversed gate closes and reopens branches, a lever that leaves the stack (closed branch, inconclusive
re-measure, a new outcome) makes what was measured with it stale, and an `unavailable` run is remembered
until the device changes. What those moves derive (stale, superseded) is handed back for the store's history.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from transitions import Machine, MachineError

from optseq.state.plan import gates
from optseq.state.plan.model import KINDS, Lever, Plan
from optseq.state.lifecycle.run_index import RunIndex

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
    # a branch closes whatever is on it, decided or not; its decisions leave the stack (see _close)
    {"trigger": "close", "source": [s for s in STATES if s != "closed"], "dest": "closed"},
    # a reversal of the gate that closed it opens the lever again, from scratch: its gates decide where to
    {"trigger": "reopen", "source": "closed", "dest": "blocked"},
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
    closed_by_lever: str = ""
    """The lever whose decision closed this one: a later decision of that lever reopens it."""
    origin: str = ""
    cleared: dict | None = None
    """The decision that left the stack without a new one (closed branch, inconclusive re-measure):
    {decision, outcome, why, run}; the export says "was …" with it and a new decision supersedes it."""
    last_run: dict | None = None
    """The latest finished run: {id, status, verdict, reason}."""
    unavailable: dict | None = None
    """{reason, run, device} while the last run was `unavailable`: skipped by `next` until the device changes."""
    results: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(candidate, criterion) -> (pass|fail, evidence)."""

    def needs_plan(self) -> bool:
        return self.plan_doc is None and self.lever.code == "none"

    def remember_origin(self) -> None:
        self.origin = self.state

    @property
    def last_decision(self) -> dict | None:
        """The current decision, or the one that left the stack: what a new decision supersedes."""
        return self.decision or (self.cleared or {}).get("decision")

    def clear_decision(self, why: str, run: int | None = None) -> None:
        """Take the lever out of the stack; its decision stays in the store's history."""
        if self.outcome is not None:
            self.cleared = {"decision": self.decision, "outcome": self.outcome, "why": why, "run": run}
        self.outcome = self.decision = self.decision_seq = None
        self.stale_reason = ""


for _origin in RUNNABLE:
    setattr(LeverModel, f"came_from_{_origin}", lambda self, _o=_origin: self.origin == _o)


class PlanMachine:
    """Every lever's state machine plus the facts, driven by plan priors and stored records."""

    def __init__(self, plan: Plan):
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
        """The doc's recommended next lever (ready or stale, a decision lever too): the export's "(next)".
        What can actually run next is `next_run`."""
        ready = [m.lever for m in self.models.values() if m.state in ("ready", "stale")]
        ready.sort(key=lambda lever: (KINDS.index(lever.kind), lever.index))
        return ready[0].id if ready else None

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
                             and gates.holds(m.lever.requires, ctx))

    def next_run(self) -> str | None:
        """The next lever that can run; None when only user actions remain (see Sequencer.todo)."""
        levers = self.runnable()
        return levers[0] if levers else None

    def _model_source(self) -> str | None:
        """The experiment whose chosen config is the model of the stack (the last decided one in plan order)."""
        source = None
        for lid, m in self.models.items():
            if m.lever.kind == "experiment" and m.outcome not in (None, "defer") and m.decision:
                source = lid
        return source

    def infra(self) -> dict:
        """The current stack: adopted levers and the chosen model config."""
        adopted = sorted(lid for lid, m in self.models.items() if m.outcome == "adopt")
        source = self._model_source()
        model_cfg: dict = {}
        if source:
            m = self.models[source]
            model_cfg = dict(m.decision.get("config") or {"name": m.outcome})
        return {"adopted": adopted, "model": model_cfg}

    def _stack(self) -> dict[str, str]:
        """lever -> outcome of every lever in the stack (the adopted ones and the model's experiment)."""
        stack = {lid: "adopt" for lid, m in self.models.items() if m.outcome == "adopt"}
        source = self._model_source()
        if source:
            stack[source] = self.models[source].outcome
        return stack

    # -- records --------------------------------------------------------------------------------
    def apply(self, table: str, record: dict) -> list[dict]:
        """Replay one stored record; returns the events it derived (levers gone stale, decisions superseded),
        which the store keeps for history. Replaying those events later changes nothing: the machine
        derives the same moves from the records that caused them."""
        self.effects = []
        if table == "facts":
            self.facts[record["name"]] = bool(record["value"])
        elif table == "criteria":
            model = self.models[record["lever"]]
            model.results[(record["candidate"], record["criterion"])] = (record["outcome"],
                                                                        record.get("evidence", ""))
        elif table == "decisions":
            self._decide(record["lever"], record["outcome"], record["seq"], record)
        elif table == "runs":
            self._run(record)
        elif table == "events":
            self._event(record)
        self.refresh()
        effects, self.effects = self.effects, []
        return effects

    def _event(self, record: dict) -> None:
        kind = record.get("type")
        model = self.models.get(record.get("lever", ""))
        if kind == "decision_point" and record.get("point"):
            self.fired[record["point"]] = record.get("at")
        if kind == "plan" and model is not None:
            model.plan_doc = record["path"]
            if model.state == "unplanned":
                model.plan_written()
        elif kind == "stale" and model is not None and model.state in DECIDED:
            model.stale_reason = record.get("reason", "")
            model.invalidate()

    def _run(self, record: dict) -> None:
        model = self.models[record["lever"]]
        self.runs.started(record)
        if record.get("status") not in ("running", "queued"):
            self.runs.ended(record)
        if model.state not in RUNNABLE:
            return  # a run of a lever whose state moved on (e.g. closed) stays in history only
        model.start()
        status = record.get("status")
        if status not in ("running", "queued"):
            self._ended(model, record, status, record.get("verdict", _verdict_of(record)))

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None,
                  record: dict | None = None) -> list[dict]:
        """A live run finished (`record`: its final run record): the same move that record makes on replay.
        Returns the derived events, as `apply` does."""
        self.effects = []
        model = self.models[lever_id]
        final = dict(record or {}, status=status, lever=lever_id)
        self.runs.ended(final)
        if model.state == "running":
            self._ended(model, final, status, verdict)
        effects, self.effects = self.effects, []
        return effects

    def _ended(self, model: LeverModel, record: dict, status: str, verdict: str | None) -> None:
        before = self._stack()
        run_id = record.get("id")
        reason = _run_reason(record)
        model.last_run = {"id": run_id, "status": status, "verdict": verdict, "reason": reason}
        device = (record.get("fingerprint") or {}).get("device")
        if status == "succeeded":
            model.finish()
            model.unavailable = None
            # the latest evidence rules: a re-measure that cannot tell takes the lever out of the stack
            # until someone decides it again (a conclusive verdict is followed by its own decision)
            if verdict == "inconclusive" and model.outcome is not None:
                why = f"re-measured inconclusive in run {run_id}" + (f": {reason}" if reason else "")
                self._supersede(model, why, run=run_id)
                model.clear_decision(why, run=run_id)
        else:
            model.abort()
            model.unavailable = ({"reason": reason, "run": run_id,
                                  "device": device or self.last_device} if status == "unavailable" else None)
        if device:
            # another device may have what this one lacked: unavailable levers are worth a new try
            for other in self.models.values():
                if other.unavailable and other.unavailable.get("device") != device:
                    other.unavailable = None
            self.last_device = device
        self.refresh()
        self._left_stack(before, f"{model.lever.id} re-measured inconclusive in run {run_id}")

    def _decide(self, lever_id: str, outcome: str, seq: int, record: dict) -> None:
        model = self.models[lever_id]
        trigger = OUTCOME_TRIGGER.get(outcome, "decide")
        if model.state == "running":
            model.abort()
        if model.state == "closed":
            return
        before = self._stack()
        open_before = {lid for lid, m in self.models.items() if m.state != "closed"}
        ctx = self.context()
        held = {lid: gates.holds(m.lever.requires, ctx) for lid, m in self.models.items()}
        previous = model.outcome
        getattr(model, trigger)()
        model.outcome, model.decision_seq, model.decision = outcome, seq, record
        model.stale_reason = ""
        model.cleared = None
        cause = f"{lever_id} decided {outcome}"
        reversal = previous is not None and previous != outcome
        if reversal:
            self._reopen(lever_id)
        branch = model.lever.criteria.branch(outcome) if model.lever.criteria else None
        for closed in branch.closes if branch else ():
            self._close(closed, lever_id, cause, record)
        if reversal:
            # what stood on the old outcome closes with it: a lever whose gate held and no longer does
            changed = True
            while changed:
                changed = False
                ctx = self.context()
                for other in self.models.values():
                    lid = other.lever.id
                    if (lid != lever_id and lid in open_before and other.state != "closed" and held[lid]
                            and not gates.holds(other.lever.requires, ctx)):
                        # a gate on this lever needs no more words; one further down names the missing link
                        direct = lever_id in {a.lever for a in gates.atoms(other.lever.requires)}
                        unmet = "; ".join(gates.unmet(other.lever.requires, ctx))
                        self._close(lid, lever_id, cause if direct else f"{cause} ({unmet})", record)
                        changed = True
        self.refresh()
        # a decision that keeps this lever out of the stack (a reject or defer of a lever not in it) changes
        # nothing a measurement stood on; one that puts it in, takes it out or re-decides it there (a new
        # version adopted again) asks a re-measure
        moved = lever_id in before or lever_id in self._stack()
        for other in self.models.values():
            if (moved and lever_id in other.lever.remeasure_when and other.state in DECIDED
                    and other.decision_seq is not None and other.decision_seq < seq and other.lever.run):
                self._stale(other, f"{lever_id} decided {outcome} after {other.lever.id} was measured")
        self._left_stack(before, cause)

    def _close(self, lever_id: str, by: str, why: str, record: dict) -> None:
        target = self.models[lever_id]
        if target.state == "closed":
            return
        self._supersede(target, f"closed: {why}", by=record.get("id"))
        target.clear_decision(f"closed: {why}")
        target.closed_by, target.closed_by_lever = why, by
        target.close()

    def _reopen(self, lever_id: str) -> None:
        """Levers closed by `lever_id`'s old outcome open again (as blocked; refresh moves them on), unless
        another decided gate's branch still closes them."""
        for other in self.models.values():
            if other.state != "closed" or other.closed_by_lever != lever_id:
                continue
            still = next((m for m in self.models.values() if m.lever.id != lever_id and m.outcome
                          and m.lever.criteria and other.lever.id in getattr(
                              m.lever.criteria.branch(m.outcome), "closes", ())), None)
            if still is not None:
                other.closed_by, other.closed_by_lever = f"{still.lever.id} decided {still.outcome}", still.lever.id
                continue
            other.closed_by = other.closed_by_lever = ""
            other.reopen()

    def _supersede(self, model: LeverModel, why: str, by: int | None = None, run: int | None = None) -> None:
        """A stored decision that leaves the stack without a decision of its own lever is marked superseded
        by a derived event naming what did it (a reversal decision or a re-measure run)."""
        decision = model.decision
        if model.outcome is None or not decision or decision.get("id") is None or decision.get("source") == "plan":
            return
        self.effects.append({"type": "superseded", "lever": model.lever.id, "decision": decision["id"],
                             "by": by, "run": run, "reason": why, "derived": True})

    def _stale(self, model: LeverModel, reason: str) -> None:
        model.stale_reason = reason
        model.invalidate()
        self.effects.append({"type": "stale", "lever": model.lever.id, "reason": reason, "derived": True})

    def _left_stack(self, before: dict[str, str], cause: str) -> None:
        """Whatever was measured with a lever that has left the stack goes stale (its baseline had it), and a
        decided lever gated on it that lost its gate too."""
        after = self._stack()
        ctx = self.context()
        for gone, outcome in before.items():
            if gone in after:
                continue
            for other in self.models.values():
                if other.lever.id == gone or other.state not in DECIDED or not other.lever.run:
                    continue
                run = self._measured_with(other, gone, outcome)
                if run is not None:
                    self._stale(other, f"{gone} left the stack ({cause}) after {other.lever.id} "
                                       f"was measured with it in run {run}")
                elif (gone in {a.lever for a in gates.atoms(other.lever.requires)}
                      and not gates.holds(other.lever.requires, ctx)):
                    self._stale(other, f"{gone} left the stack ({cause}); "
                                       + "; ".join(gates.unmet(other.lever.requires, ctx)))

    def _measured_with(self, model: LeverModel, gone: str, outcome: str):
        """The first evidence run of `model`'s decision whose stack held `gone` (its adoption or its config)."""
        experiment = self.models[gone].lever.kind == "experiment"
        for run_id in (model.decision or {}).get("runs") or []:
            infra = self.runs.infra(run_id)
            if infra is None:
                continue
            if gone in (infra.get("adopted") or ()):
                return run_id
            if experiment and (infra.get("model") or {}).get("name") == outcome:
                return run_id
        return None

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
        if model.state == "closed":
            raise TransitionRefused(f"{lever_id} is closed: {model.closed_by}")
        if model.state not in RUNNABLE:
            why = "; ".join(self.why_blocked(lever_id)) or f"it is {model.state}"
            raise TransitionRefused(f"{lever_id} is {model.state}: {why}")


def _verdict_of(run: dict) -> str | None:
    """The verdict of a run record written before runs carried a top-level `verdict`."""
    summary = run.get("summary") if isinstance(run.get("summary"), dict) else {}
    if isinstance(summary.get("verdict"), dict):
        return summary["verdict"].get("outcome")
    if "chosen" in summary:
        return summary.get("chosen") or "inconclusive"
    return None


def _run_reason(run: dict) -> str:
    """Why a run ended as it did, in one line: the rule's reason, the experiment's, or the run's detail."""
    summary = run.get("summary") if isinstance(run.get("summary"), dict) else {}
    if isinstance(summary.get("verdict"), dict) and summary["verdict"].get("reason"):
        return str(summary["verdict"]["reason"])
    for key in ("reason", "error"):
        if summary.get(key):
            return str(summary[key])
    return str(run.get("reason") or run.get("detail") or "")


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


__all__ = ["PlanMachine", "LeverModel", "TransitionRefused", "MachineError", "STATES", "DECIDED", "MARK"]
