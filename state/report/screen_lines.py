"""The export's screens: per lever, what the latest screens measured of it (its main effect and call, the levers
its gain depends on) and, flagged, where their data contradicts the plan's `requires` / `remeasure_when`
(state/lifecycle/screened.py derives both from the machine's run index; the plan is never changed)."""
from __future__ import annotations

from optseq.state.lifecycle import screened
from optseq.state.report.escape import bullet, heading, one_line
from optseq.state.report.labels import MARKS
from optseq.state.report.context import DocContext


class ScreenLines:
    """Section 6's screen facts, from the machine's kept screens; [] where no screen has ended with a fit."""

    def __init__(self, ctx: DocContext):
        self.ctx = ctx

    def lines(self) -> list[str]:
        plan, lang, screens = self.ctx.plan, self.ctx.lang, self.ctx.machine.runs.screen_runs()
        facts = screened.lever_facts(screens)
        bullets = []
        for lever in plan.levers:
            fact = facts.get(lever.id)
            if fact is None:
                continue
            said = ([fact["main_said"]] if fact["main_said"] else []) + [i["said"] for i in fact["interactions"]]
            bullets.append(bullet(f"{lever.title}: " + "; ".join(one_line(screened.text(s, lang)) for s in said)))
        for claim in screened.claims_beside_data(plan, screens):
            bullets.append(bullet(f"{MARKS['eroded']} " + one_line(screened.text(claim["said"], lang))))
        if not bullets:
            return []
        words = screened.WORDS.get(lang, screened.WORDS["en"])
        return [heading(3, words["heading"]), "", words["intro"], "", *bullets]
