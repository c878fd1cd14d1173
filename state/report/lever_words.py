"""What each lever is now, in the doc's words: the state, decision and gate texts every section writes from."""
from __future__ import annotations

import datetime as dt
import re

from optseq.state.kinds import WatchVerdict
from optseq.state.record_types import Decision
from optseq.state.runs.measured_on import at_ci_size
from optseq.state.plan import gates
from optseq.state.plan.gates import Atom
from optseq.state.report.labels import MARKS, RUNS, STORED
from optseq.state.report.context import DocContext
from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.lifecycle.states import DECIDED, MARK, LeverModel
from optseq.state.lifecycle.words import said_in
from optseq.state.plan.model import Lever
from optseq.state.text import ratio_text


class LeverWords:
    """What each lever is now, in the doc's words: the part every section asks for a lever's state, mark and texts."""

    def __init__(self, ctx: DocContext):
        self.ctx = ctx

    def stale_reason(self, model: LeverModel) -> str:
        """Why the lever went stale, in the doc's language where the machine kept its said (else as stored)."""
        return said_in(model.stale_said, model.stale_reason, self.ctx.lang, STORED)

    def closed_reason(self, model: LeverModel) -> str:
        return said_in(model.closed_said, model.closed_by, self.ctx.lang, STORED)

    # -- what a lever is now, in words ---------------------------------------------------------
    def model(self, lever_id: str) -> LeverModel:
        return self.ctx.machine.models[lever_id]

    def lever(self, lever_id: str) -> Lever:
        """The lever as the doc's plan has it, its prose in the doc's language (the machine's is the plan's)."""
        return self.ctx.plan.lever(lever_id)

    def mark(self, lever_id: str) -> str:
        if self.ctx.machine.unmerged(lever_id):  # adopted, but the merge that puts it in the stack is still to do
            return MARKS["now"]
        if self.eroded(lever_id):  # adopted, but a watch found the gain gone: not done
            return MARKS["eroded"]
        return MARKS[MARK[self.model(lever_id).state]]

    def eroded(self, lever_id: str) -> bool:
        watch = self.model(lever_id).watch
        return watch is not None and watch.verdict == WatchVerdict.ERODED and self.model(lever_id).state in DECIDED

    def code_text(self, lever_id: str) -> str:
        """An adopted branch lever's code: `merge option-b (a1b2c3d) to put it in the stack`, `in the code since
        e4f5a6b`; '' for every other lever."""
        w, model, unmerged = self.ctx.labels, self.model(lever_id), self.ctx.machine.unmerged(lever_id)
        if unmerged:
            return w["unmerged"].format(ref=unmerged["ref"], commit=str(unmerged.get("commit") or "?")[:7])
        if model.landed:
            return w["landed"].format(since=str(model.landed.since)[:7])
        return ""

    def eroded_text(self, lever_id: str) -> str:
        """`eroded: 1.04× [0.98, 1.09] at run 19 (commit d4e5f6a) against 1.31× when adopted at run 4 (a1b2c3d)`,
        the machine's sentence (status says the same) in the doc's language; '' unless the latest watch of the
        standing adopt found its gain eroded."""
        said = self.ctx.machine.eroded_said(lever_id)
        return said_in(said, "", self.ctx.lang, STORED) if said else ""

    def next_mark(self, lever_id: str) -> str:
        """` (next)` on the lever status and the console call next, and `--run next` runs (PlanMachine.next)."""
        return self.ctx.labels["next"] if self.ctx.next == lever_id else ""

    def state_text(self, lever_id: str) -> str:
        w, model = self.ctx.labels, self.model(lever_id)
        state = model.state
        if state in DECIDED:
            extra = [t for t in (self.eroded_text(lever_id), self.code_text(lever_id)) if t]
            return self.decision_text(self.lever(lever_id), model.outcome, model.decision or _NO_DECISION) + "".join(
                f" — {t}" for t in extra)
        if state == "stale":
            return w["stale"].format(reason=self.stale_reason(model) or model.outcome or "") + self.next_mark(lever_id)
        if state == "closed":
            return w["closed"].format(reason=self.closed_reason(model))
        held = self.ctx.machine.cannot_run(lever_id) if self.ctx.machine.cannot_run and state == "ready" else None
        if held:  # not ready, as status says: a branch merged before it ran (ReadViews.cannot_run)
            text = w["blocked"].format(reasons=held)
        elif state == "ready":
            text = w["ready"] + self.next_mark(lever_id)
            if model.unavailable:
                text += " — " + w["unavailable"].format(reason=model.unavailable.reason, run=model.unavailable.run)
        elif state == "unplanned":
            text = w["unplanned"]
        elif state == "running":
            run = self.latest_run(lever_id)
            text = w["running"] + (f" ({run.id})" if run and run.id is not None else "")
        elif state == "measured":
            run = self.latest_run(lever_id)
            summary = run.summary if run else None  # an old release's string summary is said
            text = w["measured"] + (f" ({summary})" if isinstance(summary, str) and summary else "")
            why = self.inconclusive_text(model)
            text += f" — {why}" if why else ""
        else:
            reasons = self.unmet(self.lever(lever_id).requires)
            if model.needs_plan():
                reasons.append(w["no_plan"])
            text = w["blocked"].format(reasons=w["and"].join(reasons)) if reasons else state
        if self.lever(lever_id).criteria:
            text += "; " + self.candidates(lever_id)
        return text

    def decision_text(self, lever: Lever, outcome: str | None, record: Decision) -> str:
        """`NO-GO (2026-11-29, 자동: why)`, `adopt 1.42× [1.31, 1.55] (…)`, or a plan prior."""
        w, outcome = self.ctx.labels, outcome or record.outcome or ""
        if record.source == "plan":
            estimate = lever.prior.estimate if lever.prior else None
            figure = f" {ratio_text(estimate)}×" if estimate is not None else ""
            return f"{outcome}{figure} ({w['plan_source']})"
        stats = record.stats or {}
        estimate, low, high = (number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high"))
        figure = ""
        if estimate is not None:
            figure = f" {ratio_text(estimate)}×" + (f" [{ratio_text(low)}, {ratio_text(high)}]" if low is not None and high is not None
                                            else "") + (f" ({w['ci_size']})" if at_ci_size(stats) else "")
        how = w["auto"] if record.auto else w["manual"]
        # with figures shown, an automatic decision's reason only repeats them; the results table has the rest
        why = "" if (estimate is not None and record.auto) else \
            said_in(record.why_said, str(record.why or "").strip(), self.ctx.lang, STORED)
        # a store with several testbeds' runs names the one this decision's numbers came from
        runs = (record.runs or []) if len(self.ctx.machine.runs.testbeds) > 1 else []
        testbed = next((t for t in (self.ctx.machine.runs.testbed(r) for r in runs) if t), None)
        where = w["testbed"].format(name=testbed["name"]) if testbed else ""
        # a decision another writer made (merged by optseq sync) names it, as the testbed of its numbers is named
        writer = (record.origin or {}).get("writer")
        by = w["writer"].format(writer=writer) if writer else ""
        meta = ", ".join(x for x in (utc_day(record.at), where, by, how + (f": {why}" if why else "")) if x)
        return f"{outcome}{figure} ({meta})"

    def inconclusive_text(self, model: LeverModel) -> str:
        """Why a measured lever waits: its latest run could not tell, and what it was decided before that."""
        run = model.last_run
        if model.state != "measured" or run is None or run.verdict != "inconclusive":
            return ""
        w, reason = self.ctx.labels, said_in(run.said or None, run.reason or "—", self.ctx.lang, RUNS)
        cleared = model.cleared
        if cleared is not None and cleared.run is not None and cleared.run == run.id:
            was = self.decision_text(self.lever(model.lever.id), cleared.outcome, cleared.decision or _NO_DECISION)
            return w["remeasured"].format(run=run.id, reason=reason, was=was)
        return w["measured_inconclusive"].format(run=run.id, reason=reason)

    def candidates(self, lever_id: str) -> str:
        criteria = self.lever(lever_id).criteria
        if criteria is None:  # a lever with no criteria gate has no candidates
            return ""
        w = self.ctx.labels
        words = {"pass": w["cand_pass"], "fail": w["cand_fail"], "pending": w["cand_pending"]}
        return ", ".join(f"{c.title or c.id} {words[self.ctx.machine.candidate_status(lever_id, c)]}"
                         for c in criteria.candidates)

    def unmet(self, expr) -> list[str]:
        """Why a gate does not hold, in the doc's language (gates.unmet says it in English for the CLI)."""
        ctx = self.ctx.machine.context()
        if expr is None or gates.holds(expr, ctx):
            return []
        w = self.ctx.labels
        if isinstance(expr, Atom):
            if expr.fact:
                return [w["needs_fact"].format(fact=expr.fact)]
            unmerged = self.ctx.machine.unmerged(expr.named)
            if unmerged:
                return [w["needs_merge"].format(lever=expr.lever, ref=unmerged["ref"],
                                                commit=str(unmerged.get("commit") or "?")[:7])]
            got = ctx.outcome_of(expr.named)
            if got is None:
                if expr.outcome == "decided":
                    return [w["needs_decided"].format(lever=expr.lever)]
                return [w["needs_outcome"].format(lever=expr.lever, outcome=expr.outcome)]
            return [w["wrong_outcome"].format(lever=expr.lever, got=got, want=expr.outcome)]
        if expr.op == "all":
            return [reason for item in expr.items for reason in self.unmet(item)]
        return [w["or"].join(w["and"].join(self.unmet(item)) for item in expr.items)]

    def latest_run(self, lever_id: str) -> KeptRun | None:
        """The lever's latest run the export was given (the run index's kept copy)."""
        mine = [r for r in self.ctx.records.runs if r.lever == lever_id]
        return max(mine, key=lambda r: r.seq or 0) if mine else None

    def plan_words(self, lever_id: str, plan_text: str) -> str:
        """The plan's own words while nothing has happened to the lever since (marked if it is next all the same);
        generated text after."""
        if lever_id not in self.ctx.changed and plan_text:
            return plan_text + self.next_mark(lever_id)
        return self.state_text(lever_id)


_NO_DECISION = Decision()
"""What a lever with no decision is said with (a decision's text of nothing: its outcome alone)."""


def short_name(lever: Lever) -> str:
    """The bold part of the title (`**AMP** trainer` → `AMP`), else the title."""
    bold = re.search(r"\*\*(.+?)\*\*", lever.title)
    return bold.group(1) if bold else lever.title


def number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def utc_day(at) -> str:
    """The UTC date of an ISO-8601 timestamp (the store writes UTC)."""
    if not at:
        return ""
    try:
        when = dt.datetime.fromisoformat(str(at))
    except ValueError:
        return str(at)[:10]
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc)
    return when.date().isoformat()
