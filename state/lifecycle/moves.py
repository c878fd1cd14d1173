"""Replaying records onto the machine: facts, criteria, decisions, runs and events, and the moves they make
(decide, close, reopen, supersede, a run ended)."""
from __future__ import annotations

from typing import Any

import msgspec

from optseq.state.kinds import IN_FLIGHT, LeverState, RunStatus, ScreenVerdict
from optseq.state.plan import gates
from optseq.state.plan.testbed import decides
from optseq.state.lifecycle.board import Board, Effects
from optseq.state.lifecycle.fields import Derived, Record, Said
from optseq.state.lifecycle.lever_records import Landed, LastRun, Unavailable
from optseq.state.record_types import UNSET, Criterion, Decision, Event, Fact, Run, RuleVerdict, Typed, as_, part
from optseq.state.lifecycle.staleness import Staleness
from optseq.state.lifecycle.standing import Standing
from optseq.state.lifecycle.watched import Watched
from optseq.state.lifecycle.states import DECIDED, OUTCOME_TRIGGER, RUNNABLE, LeverModel
from optseq.state.lifecycle.words import say, text, unmet


class RecordMoves:
    """Moves the board's levers as each record says, and gathers the events those moves derive."""

    def __init__(self, board: Board, standing: Standing, staleness: Staleness, watched: Watched,
                 effects: Effects) -> None:
        self.board, self.standing, self.staleness, self.watched = board, standing, staleness, watched
        self.effects = effects

    def apply(self, table: str, record: Record, typed: Typed | None = None) -> list[Derived]:
        """Replay one stored record (the store's dict, and its type where the reader decoded it already: else it is
        decoded here, once, state/record_types.py); returns the events it derived (levers gone stale, decisions
        superseded), which the store keeps for history. Replaying those events later changes nothing: the machine
        derives the same moves from the records that caused them."""
        self.effects.clear()
        read: Record | Typed = record if typed is None else typed
        if table == "facts":
            fact = as_(Fact, read)
            self.board.facts[fact.name] = fact.value
        elif table == "criteria":
            result = as_(Criterion, read)
            self.board.models[result.lever].results[(result.candidate, result.criterion)] = (result.outcome,
                                                                                             result.evidence)
        elif table == "decisions":
            decision = as_(Decision, read)
            if not decision.yields:  # else another writer's, made without seeing the one the lever holds, and
                # earlier (sync/conflicts.py): kept in history, it moves nothing
                self.decide(decision.lever, decision.outcome, decision.seq or 0, record, decision)
        elif table == "runs":
            self._run(record, as_(Run, read))
        elif table == "events":
            self._event(as_(Event, read))
        self.refresh()
        return self.effects.take()

    def _event(self, event: Event) -> None:
        kind = event.type
        model = self.board.models.get(event.lever or "")
        if kind == "decision_point" and event.point:
            self.board.fired[event.point] = event.at
        if kind == "plan" and model is not None:
            model.plan_doc = event.path
            if model.state == "unplanned":
                model.plan_written()
        elif kind == "stale" and model is not None and (model.state in DECIDED or model.state == LeverState.MEASURED):
            model.stale_reason = event.reason or ""
            model.stale_said = event.said  # derived events keep it; a stack change's has none
            model.invalidate()
        elif kind == "landed" and model is not None and model.outcome == "adopt" and model.landed is None:
            # the adopted branch is in the baseline's history: its decision takes effect, as an adopt does
            before = self.standing.stack()
            model.landed = Landed(commit=event.commit, since=event.since, at=event.at)
            self.refresh()
            self.staleness.remeasure(model.lever.id, "adopt", event.seq or 0, before,
                                     cause=say("landed", lever=model.lever.id, since=str(event.since)[:7]))
        elif kind == "unlanded" and model is not None and model.landed:
            before = self.standing.stack()
            model.landed = None
            self.refresh()
            commit = str(event.commit)[:7]
            self.staleness.left_stack(before, say("unlanded", commit=commit, base=event.base)
                                      if event.base else say("unlanded_baseline", commit=commit))

    def _run(self, record: Record, run: Run) -> None:
        """`record`, the store's dict, goes where a run is kept whole for the views (the run index) and to the
        plan's testbed rule; the moves read `run`, its type."""
        if run.kind == "compare":
            self.board.runs.compare(record)  # two commits of the workload: it moves no lever
            return
        if run.kind == "confirm":
            return  # a screen's paired check of a combination: the screen's decisions cite it
        if run.kind == "screen":
            self.board.runs.screen(record)  # kept whole: the levers' measured interactions are derived from it
            self._screen(record, run)
            return
        self._lever_run(record, run)

    def _lever_run(self, record: Record, run: Run) -> None:
        model = self.board.models[run.lever or ""]
        counts = decides(record, self.board.plan.testbed)
        self.board.runs.started(record, run)
        if run.status not in IN_FLIGHT:
            self.board.runs.ended(record, counts, run)
        if not counts:
            return  # measured on another testbed than the plan's deciding one: shown, it moves nothing
        if run.watch:
            # a watch checks a standing adopt: the lever's state does not move while it runs, nor after
            if run.status not in IN_FLIGHT:
                self.watched.watched(model, run)
            return
        if model.state not in RUNNABLE:
            return  # a run of a lever whose state moved on (e.g. closed) stays in history only
        model.start()
        if run.status not in IN_FLIGHT:
            self._ended(model, run, run.status, _verdict_of(run) if run.verdict is UNSET else run.verdict)

    def _screen(self, record: Record, run: Run) -> None:
        """A screen moves each of its levers as a run of it would: running while it runs, measured (or back, where
        it ended early) after; its decisions follow as records of their own."""
        screen = run.screen or {}
        verdicts, whys = part(screen, "verdicts"), part(screen, "whys")
        for lever_id in screen.get("levers") or []:
            if lever_id in self.board.models:  # each lever's reason is its own call's
                found = verdicts.get(lever_id)
                verdict = ScreenVerdict(found) if found in _SCREEN_VERDICTS else found
                detail = whys.get(lever_id, run.detail)
                self._lever_run({**record, "lever": lever_id, "verdict": verdict, "detail": detail},
                                msgspec.structs.replace(run, lever=lever_id, verdict=verdict, detail=detail))

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None,
                  record: Record | None = None) -> list[Derived]:
        """A live run finished (`record`: its final run record): the same move that record makes on replay.
        Returns the derived events, as `apply` does."""
        self.effects.clear()
        model = self.board.models[lever_id]
        final = dict(record or {}, status=status, lever=lever_id)
        run = as_(Run, final)
        if self.board.runs.is_screen(run.id):  # its end, kept whole for the views (not once per lever)
            self.board.runs.screen({k: v for k, v in final.items() if k not in ("lever", "verdict")})
        counts = decides(final, self.board.plan.testbed)
        self.board.runs.ended(final, counts, run)
        if not counts:
            pass  # another testbed's run: recorded and shown, it decides nothing here
        elif run.watch:
            self.watched.watched(model, run)
        elif model.state == LeverState.RUNNING:
            self._ended(model, run, status, verdict)
        return self.effects.take()

    def _ended(self, model: LeverModel, run: Run, status: str | None, verdict: str | None) -> None:
        before = self.standing.stack()
        run_id = run.id
        reason = _run_reason(run)
        # `said`: the rule's reason as runs/words says it, for the export's language
        said = _rule_said(run, reason)
        model.last_run = LastRun(id=run_id, status=RunStatus(status) if status else None, verdict=verdict,
                                 reason=reason, said=said or UNSET)
        device = (run.fingerprint or {}).get("device")
        if status == RunStatus.SUCCEEDED:
            model.finish()
            model.unavailable = None
            # the latest evidence rules: a re-measure that cannot tell takes the lever out of the stack
            # until someone decides it again (a conclusive verdict is followed by its own decision)
            if verdict == "inconclusive" and model.outcome is not None:
                why = (say("superseded_remeasured_why", run=run_id, reason=said or reason) if reason
                       else say("superseded_remeasured", run=run_id))
                # the rule's said nested in it is runs/words', which this table does not hold: its English is
                # the run's reason itself
                english = text(say("superseded_remeasured_why", run=run_id, reason=reason) if reason else why)
                self._supersede(model, why, run=run_id, english=english)
                model.clear_decision(english, run=run_id)
        else:
            model.abort()
            model.unavailable = (Unavailable(reason=reason, run=run_id, device=device or self.board.last_device)
                                 if status == RunStatus.UNAVAILABLE else None)
        if device:
            # another device may have what this one lacked: unavailable levers are worth a new try
            for other in self.board.models.values():
                if other.unavailable and other.unavailable.device != device:
                    other.unavailable = None
            self.board.last_device = device
        self.refresh()
        self.staleness.left_stack(before, say("remeasured", lever=model.lever.id, run=run_id))

    def decide(self, lever_id: str, outcome: str, seq: int, record: Record, decision: Decision | None = None) -> None:
        """A decision's move: the lever to its outcome's state; a reversal reopens what the old outcome closed and
        closes what stood on it; a branch closes what it closes; what was measured with it goes stale. `record`:
        the store's (or the plan prior's) dict, `decision` its type where the caller decoded it."""
        typed = as_(Decision, record if decision is None else decision)
        model = self.board.models[lever_id]
        trigger = OUTCOME_TRIGGER.get(outcome, "decide")
        if model.state == LeverState.RUNNING:
            model.abort()
        if model.state == LeverState.CLOSED:
            return
        before = self.standing.stack()
        open_before = {lid for lid, m in self.board.models.items() if m.state != LeverState.CLOSED}
        ctx = self.standing.context()
        held = {lid: gates.holds(m.lever.requires, ctx) for lid, m in self.board.models.items()}
        previous = model.outcome
        getattr(model, trigger)()
        model.outcome, model.decision_seq, model.decision, model.decision_stored = outcome, seq, typed, record
        model.landed = None  # a branch adopted anew lands anew
        model.watch = None  # and is watched anew
        model.stale_reason, model.stale_said = "", None
        model.cleared = None
        cause = say("decided", lever=lever_id, outcome=outcome)
        reversal = previous is not None and previous != outcome
        if reversal:
            self._reopen(lever_id)
        branch = model.lever.criteria.branch(outcome) if model.lever.criteria else None
        for closed in branch.closes if branch else ():
            self._close(closed, lever_id, cause, typed.id)
        if reversal:
            # what stood on the old outcome closes with it: a lever whose gate held and no longer does
            changed = True
            while changed:
                changed = False
                ctx = self.standing.context()
                for other in self.board.models.values():
                    lid = other.lever.id
                    if (lid != lever_id and lid in open_before and other.state != LeverState.CLOSED and held[lid]
                            and not gates.holds(other.lever.requires, ctx)):
                        # a gate on this lever needs no more words; one further down names the missing link
                        direct = lever_id in {a.lever for a in gates.atoms(other.lever.requires)}
                        why = cause if direct else say("decided_gate", lever=lever_id, outcome=outcome,
                                                       reasons=unmet(other.lever.requires, ctx))
                        self._close(lid, lever_id, why, typed.id)
                        changed = True
        self.refresh()
        self.staleness.remeasure(lever_id, outcome, seq, before)
        self.staleness.left_stack(before, cause)

    def _close(self, lever_id: str, by: str, why: Said, decision_id: int | None) -> None:
        target = self.board.models[lever_id]
        if target.state == LeverState.CLOSED:
            return
        self._supersede(target, say("closed", why=why), by=decision_id)
        target.clear_decision(text(say("closed", why=why)))
        target.closed_by, target.closed_said, target.closed_by_lever = text(why), why, by
        target.close()

    def _reopen(self, lever_id: str) -> None:
        """Levers closed by `lever_id`'s old outcome open again (as blocked; refresh moves them on), unless
        another decided gate's branch still closes them."""
        for other in self.board.models.values():
            if other.state != LeverState.CLOSED or other.closed_by_lever != lever_id:
                continue
            still = next((m for m in self.board.models.values() if m.lever.id != lever_id and m.outcome
                          and m.lever.criteria and other.lever.id in getattr(
                              m.lever.criteria.branch(m.outcome), "closes", ())), None)
            if still is not None:
                other.closed_said = say("decided", lever=still.lever.id, outcome=str(still.outcome))
                other.closed_by, other.closed_by_lever = text(other.closed_said), still.lever.id
                continue
            other.closed_by = other.closed_by_lever = ""
            other.closed_said = None
            other.reopen()

    def _supersede(self, model: LeverModel, why: Said, by: int | None = None, run: int | None = None,
                   english: str | None = None) -> None:
        """A stored decision that leaves the stack without a decision of its own lever is marked superseded
        by a derived event naming what did it (a reversal decision or a re-measure run)."""
        decision = model.decision
        if model.outcome is None or decision is None or decision.id is None or decision.source == "plan":
            return
        self.effects.add({"type": "superseded", "lever": model.lever.id, "decision": decision.id,
                             "by": by, "run": run, "reason": english or text(why), "said": why,
                             "derived": True})

    def refresh(self) -> None:
        """Move levers across their gates until nothing changes (a fact or decision may cascade)."""
        self.staleness.edited()
        ctx = self.standing.context()
        changed = True
        while changed:
            changed = False
            for model in self.board.models.values():
                met = gates.holds(model.lever.requires, ctx)
                if model.state == LeverState.BLOCKED and met:
                    model.gates_met()
                    changed = True
                elif model.state in (LeverState.READY, LeverState.UNPLANNED) and not met:
                    model.gates_lost()
                    changed = True


_SCREEN_VERDICTS = tuple(ScreenVerdict)


def _verdict_of(run: Run) -> str | None:
    """The verdict of a run record written before runs carried a top-level `verdict`."""
    summary = run.figures
    if isinstance(summary.verdict, RuleVerdict):
        return summary.verdict.outcome
    if summary.chosen is not UNSET:  # a best-of run's: none chosen is inconclusive
        return summary.chosen or "inconclusive"
    return None


def _rule_said(run: Run, reason: str) -> Said | None:
    """The said the rule's verdict kept beside `reason` (runs/words.py), where `reason` is that verdict's."""
    summary = run.figures
    # an A/B run's verdict, else a best-of run's comparison (its reason is the summary's)
    if isinstance(summary.verdict, RuleVerdict):
        said, told = summary.verdict.said, summary.verdict.reason
    else:
        best_of = summary.best_of or {}
        said, told = best_of.get("said"), best_of.get("reason")
    return said if isinstance(said, dict) and told == reason else None


def _run_reason(run: Run) -> str:
    """Why a run ended as it did, in one line: the rule's reason, the experiment's, or the run's detail."""
    summary = run.figures
    reason = summary.rule_verdict.reason or summary.reason or summary.error
    return str(reason) if reason else str(run.reason or run.detail or "")
