"""The plan and its live state written back as the seed's markdown doc: table, graphs, order, status, results."""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.states import DECIDED
from optseq.state.plan.gates import Atom
from optseq.state.plan.model import Plan
from optseq.state.plan.prose import localized
from optseq.state.report.escape import block, bullet, heading, one_line
from optseq.state.report.graph import Graph
from optseq.state.report.hours import Hours
from optseq.state.report.context import DocContext, doc_context
from optseq.state.report.labels import MARKS, labels
from optseq.state.report.lever_words import LeverWords, short_name, utc_day
from optseq.state.report.records import decoded
from optseq.state.record_types import Event
from optseq.state.report.marker import marker
from optseq.state.report.tables import Tables


def render(plan: Plan, machine: PlanMachine, records: Mapping[str, Sequence[object]] | None, *,
           lang: str | None = None, today: dt.date | str | None = None,
           charts: dict[str, str] | None = None) -> str:
    """The whole doc; `records` are the stored records already replayed onto `machine`.

    `charts`: lever id -> its chart's path relative to the doc (report/charts.py writes them), linked from the
    results; None for a doc whose charts are written nowhere (stdout, a preview), so it links none.
    """
    lang = lang or plan.lang
    words = labels(lang)  # an unknown language is refused before anything else is read
    day = None if today is None else today.isoformat() if isinstance(today, dt.date) else str(today)
    # the plan's prose in the doc's language (its own where it gives no other): every section reads this plan
    ctx = doc_context(localized(plan, lang), machine, decoded(records), lang, words, charts=charts or {}, day=day)
    return _Doc(ctx).render()


class _Doc:
    """The doc's sections in order: its own (title, order, status, decision points) and its parts'."""

    def __init__(self, ctx: DocContext):
        self.ctx = ctx
        self.levers = LeverWords(ctx)
        self.tables, self.graph, self.hours = Tables(ctx, self.levers), Graph(ctx, self.levers), Hours(ctx)

    def render(self) -> str:
        plan = self.ctx.plan
        # a section with nothing to say is left out: a plan without order or decision points (a team's
        # starter plan) must not export empty headings as if the doc had lost them
        parts = [self.head(), self.tables.table(), self.graph.section() if self.graph.has_edges() else "",
                 self.order() if plan.order else "", self.hours.section() if plan.volume else "", self.status(),
                 self.points() if plan.decision_points else "", self.tables.results()]
        parts = [part for part in parts if part]
        # always last, dated or not: the mark report/target.py looks for before it replaces a file
        parts.append(marker(self.ctx.day))
        return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"

    # -- 1. title (its table: tables.py; 2. the graph: graph.py) ---------------------------------------------
    def head(self) -> str:
        plan = self.ctx.plan
        return heading(1, plan.title) + (f"\n\n{block(plan.intro, prose=True)}" if plan.intro else "")

    # -- 3. order, 4. status, 5. decision points -----------------------------------------------------------------
    def order(self) -> str:
        levers = self.levers
        lines = [heading(2, self.ctx.labels['order'])]
        for i, item in enumerate(self.ctx.plan.order, 1):
            done = bool(item.levers) and all(levers.model(l).state in DECIDED and not levers.eroded(l)
                                             for l in item.levers)
            now = f" ({one_line(item.now)})" if item.now and not done else ""
            head = f"**{i}. {one_line(item.title)}{now}**" + (f" {MARKS['done']}" if done else "")
            lines += ["", block(head + (f" — {item.text}" if item.text else ""), prose=True)]
        return "\n".join(lines)

    # (the hours-saved section, between the order and the status: hours.py)
    def status(self) -> str:
        plan, records, w, levers, changed = self.ctx.plan, self.ctx.records, self.ctx.labels, self.levers, self.ctx.changed
        latest = max([((r.seq or 0), str(r.at)) for r in records.dated()]
                      + [(r.seq or 0, str(r.at)) for r in records.runs if r.at], default=None)
        day = utc_day(latest[1]) if latest else plan.as_of.isoformat()
        lines = [heading(2, w['status'].format(date=day)), ""]
        listed = set()
        for item in plan.status:
            lever = plan.lever(item.lever)
            listed.add(item.lever)
            if item.about == "code":
                mark = MARKS["done"] if lever.code != "none" else MARKS["waiting"]
                text = item.text if item.lever not in changed else f"{item.text} — {levers.state_text(item.lever)}"
            else:
                mark = levers.mark(item.lever)
                text = item.text + levers.next_mark(item.lever) if item.lever not in changed else \
                    f"{short_name(lever)}: {levers.state_text(item.lever)}"
            lines.append(bullet(f"{mark} {text}"))
        for lever in plan.levers:
            if lever.id in changed and lever.id not in listed:
                lines.append(bullet(f"{levers.mark(lever.id)} {short_name(lever)}: {levers.state_text(lever.id)}"))
        for c in records.conflicts:  # two writers' decisions, neither seen by the other (sync)
            h, o = c.holds, c.other
            lines.append(bullet(f"{MARKS['eroded']} " + one_line(w["conflict"].format(
                lever=c.lever, holds=h.outcome, hw=h.writer, hwhy=h.why or "-", other=o.outcome,
                ow=o.writer, owhy=o.why or "-"))))
        return "\n".join(lines)

    def points(self) -> str:
        w = self.ctx.labels
        fired: dict[str, Event] = {}
        for event in self.ctx.records.events:
            named = event.point
            if event.type != "decision_point" or named is None:
                continue
            if named not in fired or (event.seq or 0) >= (fired[named].seq or 0):
                fired[named] = event
        lines = [heading(2, w['points']), "", w["points_intro"]]
        for point in self.ctx.plan.decision_points:
            text = point.text
            if point.id in fired:
                text += w["fired"].format(date=utc_day(fired[point.id].at))
                text += self.reopened(point.reopens)
            lines.append(bullet(text))
        return "\n".join(lines)

    def reopened(self, lever_ids) -> str:
        """What a fired point sends the reader back to: the levers it reopens that can move now. One that is
        closed, or whose gate the decisions taken rule out, is said to be, with what its gate waits for (the
        decision that would open it again)."""
        w, levers, ctx = self.ctx.labels, self.levers, self.ctx.machine.context()
        shut = {l: "stays_closed" if levers.model(l).state == "closed" else "stays_blocked"
                for l in lever_ids if levers.model(l).state == "closed" or not _possible(levers.lever(l).requires, ctx)}
        open_now = [l for l in lever_ids if l not in shut]
        text = w["reopens_one" if len(open_now) == 1 else "reopens"].format(
            levers=", ".join(short_name(levers.lever(l)) for l in open_now)) if open_now else ""
        for lever_id, how in shut.items():
            why = w["and"].join(levers.unmet(levers.lever(lever_id).requires)) or levers.closed_reason(levers.model(lever_id))
            text += w[how].format(lever=short_name(levers.lever(lever_id)), why=why)
        return text


def _possible(expr, ctx) -> bool:
    """Whether a gate can still hold without a decision taken being taken back: facts and undecided levers
    may yet come true, a lever decided another way may not."""
    if expr is None:
        return True
    if isinstance(expr, Atom):
        got = None if expr.fact else ctx.outcome_of(expr.lever)
        return got is None or expr.outcome in ("decided", got)
    results = [_possible(item, ctx) for item in expr.items]
    return all(results) if expr.op == "all" else any(results)
