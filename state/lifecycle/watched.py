"""A watch of an adopted lever (`optseq --run watch`) applied to the machine: the claim the adopt made is checked on
the current code and stack, and the lever's state does not move. An eroded gain is marked and stays in the stack
(the user decides what to do), and what was measured on top of it goes stale, once, when it erodes."""
from __future__ import annotations

from typing import Any, TypeGuard

from optseq.state.kinds import WatchVerdict
from optseq.state.lifecycle.board import Board
from optseq.state.lifecycle.fields import Record, Said, part
from optseq.state.lifecycle.lever_records import Watch
from optseq.state.lifecycle.staleness import Staleness, stands_on_runs
from optseq.state.lifecycle.states import LeverModel
from optseq.state.lifecycle.words import say, text
from optseq.state.record_types import Run, as_
from optseq.state.text import ratio_text


def commit_of(fingerprint: dict[str, Any] | None) -> str | None:
    """The commit a run measured: the repository's HEAD for a lever run in the working tree, the baseline's commit
    for a branch lever."""
    code = part(fingerprint, "code")
    if code:
        return part(code, "baseline").get("commit")
    return part(fingerprint, "repo").get("head")


class Watched:
    """Applies a finished watch to its lever, and says what the latest one found of the adopted gain."""

    def __init__(self, board: Board, staleness: Staleness) -> None:
        self.board, self.staleness = board, staleness

    def watched(self, model: LeverModel, record: Record | Run) -> None:
        """A finished watch of `model`: kept as its `watch`; an eroded gain makes what was measured on it stale."""
        watch = as_(Run, record)
        if model.outcome != "adopt" or watch.status != "succeeded":
            return  # a decision since replaced what it checked; a watch that failed says nothing of the gain
        if watch.verdict not in _VERDICTS:
            return
        verdict = WatchVerdict(watch.verdict)
        stats = watch.stats
        was = model.watch.verdict if model.watch else None
        model.watch = Watch(run=watch.id, verdict=verdict, estimate=stats.estimate, ci_low=stats.ci_low,
                            ci_high=stats.ci_high, commit=commit_of(watch.fingerprint), at=watch.ended)
        if verdict == WatchVerdict.ERODED and was != WatchVerdict.ERODED:
            eroded = self.eroded_said(model.lever.id)
            for other in self.board.models.values():
                if other is model or not stands_on_runs(other):
                    continue
                run = self.staleness.measured_with(other, model.lever.id, "adopt")
                if run is not None:
                    self.staleness.stale(other, say("eroded_after", lever=model.lever.id, eroded=eroded,
                                                    other=other.lever.id, run=run))

    def adopted_figure(self, lever_id: str) -> tuple[float | None, int | None, str | None]:
        """The gain the standing adopt claimed: (estimate, run, commit), each None where unknown (a plan's prior has
        no run)."""
        model = self.board.models[lever_id]
        decision = model.decision
        if decision is not None and decision.source == "plan":
            prior = model.lever.prior
            return (prior.estimate if prior else None), None, None
        runs = (decision.runs if decision else None) or []
        run = runs[0] if runs else None
        estimate = (decision.stats or {}).get("estimate") if decision else None
        return estimate, run, commit_of(self.board.runs.fingerprint(run)) if run is not None else None

    def eroded_text(self, lever_id: str) -> str | None:
        """`eroded: 1.04× [0.98, 1.09] at run 19 (commit d4e5f6) against 1.31× when adopted at run 4 (a1b2c3)`;
        None unless the latest watch of the standing adopt found the gain eroded."""
        said = self.eroded_said(lever_id)
        return text(said) if said else None

    def eroded_said(self, lever_id: str) -> Said | None:
        """eroded_text as lifecycle/words says it."""
        model = self.board.models[lever_id]
        watch = model.watch
        if watch is None or watch.verdict != WatchVerdict.ERODED:
            return None
        bounds = (f" [{_x(watch.ci_low, '')}, {_x(watch.ci_high, '')}]" if _number(watch.ci_low)
                  and _number(watch.ci_high) else "")
        commit = say("commit", commit=str(watch.commit)[:7]) if watch.commit else ""
        source = model.decision.source if model.decision else None
        return say("eroded", figure=_x(watch.estimate) + bounds, run=watch.run, commit=commit,
                   against=_against(*self.adopted_figure(lever_id), plan=source == "plan"))


_VERDICTS = tuple(WatchVerdict)


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _x(value: object, unit: str = "×") -> str:
    return f"{ratio_text(value)}{unit}" if _number(value) else "?"


def _against(estimate: float | None, run: int | None, commit: str | None, plan: bool) -> Said:
    """What the gain was when adopted; where no figure was kept, why (a `?` said nothing of it)."""
    if estimate is None:
        if plan:
            return say("against_none_plan")
        return say("against_none_hand") if run is None else say("against_none_run", run=run)
    if run is None:
        return say("against_plan", figure=_x(estimate))
    return say("against_run", figure=_x(estimate), run=run, commit=f" ({str(commit)[:7]})" if commit else "")
