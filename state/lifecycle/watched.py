"""A watch of an adopted lever (`optseq --run watch`) applied to the machine: the claim the adopt made is checked on
the current code and stack, and the lever's state does not move. An eroded gain is marked and stays in the stack
(the user decides what to do), and what was measured on top of it goes stale, once, when it erodes."""
from __future__ import annotations

from optseq.state.lifecycle.states import DECIDED, LeverModel
from optseq.state.lifecycle.words import say, text
from optseq.state.text import ratio_text

VERDICTS = {"adopt": "holds", "reject": "eroded", "inconclusive": "inconclusive"}
"""The rule's outcome on a watch run -> what it says of the adopted gain."""


def commit_of(fingerprint: dict | None) -> str | None:
    """The commit a run measured: the repository's HEAD for a lever run in the working tree, the baseline's commit
    for a branch lever."""
    fingerprint = fingerprint or {}
    code = fingerprint.get("code") if isinstance(fingerprint.get("code"), dict) else None
    if code:
        return (code.get("baseline") or {}).get("commit")
    repo = fingerprint.get("repo") if isinstance(fingerprint.get("repo"), dict) else {}
    return repo.get("head")


class Watched:
    """Mixed into the lever machine: uses `models`, `runs` and the staleness methods."""

    def _watched(self, model: LeverModel, record: dict) -> None:
        if model.outcome != "adopt" or record.get("status") != "succeeded":
            return  # a decision since replaced what it checked; a watch that failed says nothing of the gain
        verdict = record.get("verdict")
        if verdict not in VERDICTS.values():
            return
        summary = record.get("summary") if isinstance(record.get("summary"), dict) else {}
        stats = summary.get("stats") if isinstance(summary.get("stats"), dict) else {}
        was = (model.watch or {}).get("verdict")
        model.watch = {"run": record.get("id"), "verdict": verdict, "estimate": stats.get("estimate"),
                       "ci_low": stats.get("ci_low"), "ci_high": stats.get("ci_high"),
                       "commit": commit_of(record.get("fingerprint")), "at": record.get("ended")}
        if verdict == "eroded" and was != "eroded":
            eroded = self.eroded_said(model.lever.id)
            for other in self.models.values():
                if other is model or other.state not in (*DECIDED, "measured") or not other.lever.run:
                    continue
                run = self._measured_with(other, model.lever.id, "adopt")
                if run is not None:
                    self._stale(other, say("eroded_after", lever=model.lever.id, eroded=eroded, other=other.lever.id,
                                           run=run))

    def adopted_figure(self, lever_id: str) -> tuple[float | None, int | None, str | None]:
        """The gain the standing adopt claimed: (estimate, run, commit), each None where unknown (a plan's prior has
        no run)."""
        model = self.models[lever_id]
        decision = model.decision or {}
        if decision.get("source") == "plan":
            prior = model.lever.prior
            return (prior.estimate if prior else None), None, None
        runs = decision.get("runs") or []
        run = runs[0] if runs else None
        estimate = (decision.get("stats") or {}).get("estimate")
        return estimate, run, commit_of(self.runs.fingerprint(run)) if run is not None else None

    def eroded_text(self, lever_id: str) -> str | None:
        """`eroded: 1.04× [0.98, 1.09] at run 19 (commit d4e5f6) against 1.31× when adopted at run 4 (a1b2c3)`;
        None unless the latest watch of the standing adopt found the gain eroded."""
        said = self.eroded_said(lever_id)
        return text(said) if said else None

    def eroded_said(self, lever_id: str) -> dict | None:
        """eroded_text as lifecycle/words says it."""
        watch = self.models[lever_id].watch or {}
        if watch.get("verdict") != "eroded":
            return None
        bounds = (f" [{_x(watch['ci_low'], '')}, {_x(watch['ci_high'], '')}]" if _number(watch.get("ci_low"))
                  and _number(watch.get("ci_high")) else "")
        commit = say("commit", commit=str(watch["commit"])[:7]) if watch.get("commit") else ""
        source = (self.models[lever_id].decision or {}).get("source")
        return say("eroded", figure=_x(watch.get("estimate")) + bounds, run=watch.get("run"), commit=commit,
                   against=_against(*self.adopted_figure(lever_id), plan=source == "plan"))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _x(value, unit: str = "×") -> str:
    return f"{ratio_text(value)}{unit}" if _number(value) else "?"


def _against(estimate, run, commit, plan: bool) -> dict:
    """What the gain was when adopted; where no figure was kept, why (a `?` said nothing of it)."""
    if estimate is None:
        if plan:
            return say("against_none_plan")
        return say("against_none_hand") if run is None else say("against_none_run", run=run)
    if run is None:
        return say("against_plan", figure=_x(estimate))
    return say("against_run", figure=_x(estimate), run=run, commit=f" ({str(commit)[:7]})" if commit else "")
