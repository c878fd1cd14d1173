"""The export's change points: one line per lever whose kept runs moved to another level, naming the commits
around the change (state/runs/lever_changes.py finds them; `optseq runs LEVER` has every run and counts the commits)."""
from __future__ import annotations

from optseq.state.report.escape import bullet, code, heading, one_line
from optseq.state.report.context import DocContext
from optseq.state.text import ratio_text


class ChangeLines:
    """Section 6's change points, from the machine's recent runs of each lever (what the history plot shows)."""

    def __init__(self, ctx: DocContext):
        self.ctx = ctx

    def lines(self) -> list[str]:
        """A heading, a line on what a change point is, and one bullet per lever with a change, in plan order;
        [] when no lever has one (and no detector is imported for a plan with too few runs)."""
        from optseq.state.runs.lever_changes import MIN_RUNS, changes, series

        bullets = []
        for lever in self.ctx.plan.levers:
            # as stored: lever_changes reads runs as `optseq runs` hands them over, from the journal
            runs = [r.stored for r in self.ctx.machine.runs.recent.get(lever.id, [])]
            found = changes(runs) if len(series(runs)) >= MIN_RUNS else []
            if found:
                bullets.append(bullet(f"{lever.title}: " + "; ".join(self.change_text(c) for c in found)))
        if not bullets:
            return []
        w = self.ctx.labels
        return [heading(3, w["changes"]), "", w["changes_intro"], "", *bullets]

    def change_text(self, change) -> str:
        w = self.ctx.labels
        text = w["change_at"].format(run=change.run, before=f"{ratio_text(change.before)}×", after=f"{ratio_text(change.after)}×")
        commits = change.commits()
        if commits is None:
            text += w["change_no_commit"]
        elif commits[0] == commits[1]:
            text += w["change_same_commit"].format(commit=commits[0])
        else:
            span = f"{commits[0]}..{commits[1]}"
            text += w["change_commits"].format(span=span, command=code(f"git log {span}"))
        old, new = change.old.get("device"), change.new.get("device")
        if old and new and old != new:
            text += w["change_device"].format(old=one_line(old), new=one_line(new))
        return text
