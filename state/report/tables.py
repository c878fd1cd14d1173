"""The doc's two tables: the pending levers (their plan and state), and the results (decisions, history, charts)."""
from __future__ import annotations

import re

from optseq.state.runs.measured_on import at_ci_size
from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.lifecycle.states import DECIDED
from optseq.state.lifecycle.words import said_in
from optseq.state.plan.model import Lever
from optseq.state.record_types import Decision
from optseq.state.report.escape import bullet, cell, code, heading, html, one_line
from optseq.state.report.change_lines import ChangeLines
from optseq.state.report.context import DocContext
from optseq.state.report.lever_words import LeverWords, number, utc_day
from optseq.state.report.screen_lines import ScreenLines
from optseq.state.runs.stats import arms_text
from optseq.state.report.labels import RUNS, STORED
from optseq.state.text import ratio_text

HISTORY_PER_LEVER = 10
"""Earlier decisions the export lists per lever; the rest are counted (`optseq runs LEVER` has them all)."""
Past = tuple[int, Lever, "str | None", "Decision | int"]
"""A decision of the history: its seq, the lever, its outcome, its record (or the plan's prior), or how many
earlier decisions are left out."""
_PRIOR = Decision(source="plan")
"""The plan's prior, as the history lists it."""
_NO_RUN = KeptRun()
"""What a lever the export was given no run of is said with: no figures, no time."""


class Tables:
    """Section 1's table and section 6, the results (with its change points and screens); each lever's state from
    the doc's LeverWords."""

    def __init__(self, ctx: DocContext, levers: LeverWords):
        self.ctx, self.levers = ctx, levers
        self.changes, self.screens = ChangeLines(ctx), ScreenLines(ctx)

    # -- 1. the pending-levers table --------------------------------------------------------------------------
    def table(self) -> str:
        w, plan = self.ctx.labels, self.ctx.plan
        # the plan's own rows, then any other lever that has moved; a decided or closed lever is pending no more
        # (its outcome is in the status and the results)
        rows = [lid for lid in dict.fromkeys(plan.table) if self.pending(lid)]
        rows += [lever.id for lever in plan.levers if lever.id not in rows and lever.id not in plan.table
                 and self.pending(lever.id) and self.levers.model(lever.id).state != "blocked"]
        lines = [heading(2, w['pending']), ""]
        if not rows:
            return "\n".join(lines + [w["nothing_pending"]])
        lines += [f"| {w['col_lever']} | {w['col_plan']} | {w['col_state']} |", "| --- | --- | --- |"]
        for lever_id in rows:
            lever, model = plan.lever(lever_id), self.levers.model(lever_id)
            if model.plan_doc:
                where = code(model.plan_doc) + (f" ({lever.plan_note})" if lever.plan_note else "")
            elif lever.arms is not None:
                where = lever.plan_note or (w["arms_branch"].format(ref=lever.arms.candidate_ref)
                                            if lever.arms.branch else w["arms"])
            else:
                where = lever.plan_note or w["no_plan"]
            state = self.levers.plan_words(lever_id, lever.status)
            lines.append(f"| {cell(lever.title)} | {cell(where)} | {cell(state)} |")
        return "\n".join(lines)

    def pending(self, lever_id: str) -> bool:
        """Still to be decided: neither decided (adopted, rejected, deferred, a decision lever's outcome) nor closed;
        or adopted with its gain eroded, which waits for a decision again (status's to-do asks for one)."""
        return self.levers.model(lever_id).state not in (*DECIDED, "closed") or self.levers.eroded(lever_id)

    # -- 6. results ---------------------------------------------------------------------------------------------
    def results(self) -> str:
        w, plan, lang = self.ctx.labels, self.ctx.plan, self.ctx.lang
        rows: list[list] = []
        history: list[Past] = []
        decisions = [r for r in self.ctx.records.decisions if plan.has_lever(r.lever)]
        replaced = {r.supersedes for r in decisions if r.supersedes is not None}
        for lever in plan.levers:
            model = self.levers.model(lever.id)
            record = model.decision
            stale = w["stale"].format(reason=self.levers.stale_reason(model)) if model.state == "stale" else ""
            note = _joined(stale, self.levers.eroded_text(lever.id), self.levers.code_text(lever.id))
            if record is not None and record.source == "plan":
                if lever.prior and lever.prior.estimate is not None:
                    rows.append([lever.title, model.outcome or "", "—", f"{ratio_text(lever.prior.estimate)}×", "—", "—",
                                 "—", plan.as_of.isoformat(), w["plan_source"], note])
            elif record is not None and record.stats:
                rows.append([lever.title, model.outcome or "", *self.stats_cells(record.stats),
                             utc_day(record.at), w["auto"] if record.auto else w["manual"],
                             _joined(note, figures_note(record.stats, lang))])
            elif record is None and self.levers.inconclusive_text(model):
                # the latest evidence rules: an inconclusive run's figures, with why and what it replaced
                run = self.levers.latest_run(lever.id) or _NO_RUN
                stats = run.stored_stats if run.figures.stats is not None else None  # its every figure, as stored
                cells = self.stats_cells(stats) if stats else ["—"] * 5
                rows.append([lever.title, w["inconclusive"], *cells, utc_day(run.ended or run.at),
                             w["auto"], _joined(self.levers.inconclusive_text(model), figures_note(stats, lang))])
            past: list[Past] = [(0, lever, lever.prior.outcome, _PRIOR)] \
                if lever.prior and model.decision_seq != 0 else []
            # the store's records carry no `superseded` mark (the views' history adds it): a decision another
            # superseded, or not the lever's standing one, is history
            for r in sorted((r for r in decisions if r.lever == lever.id), key=lambda r: r.seq or 0):
                if r.id in replaced or r.seq != model.decision_seq:
                    past.append((r.seq or 0, lever, r.outcome, r))
            # older decisions the store's digest left out (views.export_records): none is a standing one
            hidden = sum(h.count for h in self.ctx.records.decisions_hidden if h.lever == lever.id)
            if len(past) + hidden > HISTORY_PER_LEVER:
                # a doc that lists every decision of a long-lived store is read by nobody: the newest, and a count
                earlier = len(past) + hidden - HISTORY_PER_LEVER
                past = [(0, lever, None, earlier)] + past[-HISTORY_PER_LEVER:]
            history += past
        lines = [heading(2, w['results']), ""]
        if rows:
            head = [w[k] for k in ("col_lever", "col_outcome", "col_metric", "col_ratio", "col_ci", "col_n", "col_p",
                                   "col_date", "col_source", "col_note")]
            lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            lines += ["| " + " | ".join(cell(str(c)) for c in row) + " |" for row in rows]
        links = self.chart_links()
        if links:
            lines += (["", *links] if rows else links)
        if history:
            lines += (["", heading(3, w['history']), ""] if rows or links else [heading(3, w['history']), ""])
            gone = self.superseded_reasons()
            lines += [bullet(f"{lever.title}: " + w["history_more"].format(n=record, lever=lever.id))
                      if isinstance(record, int) else
                      bullet(f"{lever.title}: {self.levers.decision_text(lever, outcome, record)}"
                              + (f" — {w['superseded_by'].format(reason=gone[record.id])}"
                                 if record.id is not None and record.id in gone else ""))
                      for _, lever, outcome, record in history]
        changed, screens = self.changes.lines(), self.screens.lines()
        changed += ([""] if changed and screens else []) + screens
        if changed:
            lines += (["", *changed] if rows or links or history else changed)
        if not rows and not history and not links and not changed:
            lines.append(w["nothing_measured"])
        return "\n".join(lines)

    def chart_links(self) -> list[str]:
        """One image per charted lever, in plan order, each its own paragraph (blank lines between)."""
        from urllib.parse import quote

        out: list[str] = []
        for lever in self.ctx.plan.levers:
            path = self.ctx.charts.get(lever.id)
            if path:
                # percent-encoded: a space, bracket or parenthesis in the doc's name would end the link early
                alt = re.sub(r"([\\\[\]])", r"\\\1", one_line(f"{lever.id}: estimate and 95% CI per run"))
                out += ([""] if out else []) + [f"![{html(alt)}]({quote(path)})"]
        return out

    def superseded_reasons(self) -> dict[int, str]:
        """decision id -> why it left the stack, from the derived `superseded` events (reversal, re-measure)."""
        return {e.decision: said_in(e.said, e.reason or "", self.ctx.lang, STORED)
                for e in self.ctx.records.events if e.type == "superseded" and e.decision is not None}

    def stats_cells(self, stats: dict) -> list[str]:
        estimate, low, high, p = (number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high", "p_value"))
        n = stats.get("n")
        return [
            str(stats.get("metric") or "—"),
            (f"{ratio_text(estimate)}×" + (f" ({self.ctx.labels['ci_size']})" if at_ci_size(stats) else ""))
            if estimate is not None
            else "—",
            f"[{ratio_text(low)}, {ratio_text(high)}]" if low is not None and high is not None else "—",
            str(n) if n is not None else "—",
            ("<0.001" if p < 0.001 else f"{p:.3f}") if p is not None else "—",
        ]


def figures_note(stats: dict | None, lang: str = "en") -> str:
    """What a benchmarker reads beside the ratio: each arm's median (IQR) with its n, the run's noise line, where
    its arms' order came from and, on an adopt, what its candidate calls could have seen of a stall (each in
    `lang` where the run kept its said). Empty for stats that carry none (a decision stored before per-arm
    figures were kept)."""
    stats = stats if isinstance(stats, dict) else {}
    arms = arms_text(stats, names=True)
    n = (stats.get("baseline") or {}).get("n") if isinstance(stats.get("baseline"), dict) else None
    if arms and isinstance(n, int):
        arms += f", n={n}"
    return _joined(arms, *(said_in(stats.get(f"{line}_said"), str(stats.get(line) or ""), lang, RUNS)
                           for line in ("noise", "order", "stalls")))


def _joined(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
