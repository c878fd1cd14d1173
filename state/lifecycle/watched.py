"""A watch of an adopted lever (`optseq --run watch`) applied to the machine: the claim the adopt made is checked on
the current code and stack, and the lever's state does not move. An eroded gain is marked and stays in the stack
(the user decides what to do), and what was measured on top of it goes stale, once, when it erodes."""
from __future__ import annotations

from optseq.state.lifecycle.states import DECIDED, LeverModel

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
            why = f"{model.lever.id}'s gain eroded ({self.eroded_text(model.lever.id)})"
            for other in self.models.values():
                if other is model or other.state not in (*DECIDED, "measured") or not other.lever.run:
                    continue
                run = self._measured_with(other, model.lever.id, "adopt")
                if run is not None:
                    self._stale(other, f"{why} after {other.lever.id} was measured on top of it in run {run}")

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
        watch = self.models[lever_id].watch or {}
        if watch.get("verdict") != "eroded":
            return None
        return "eroded: " + _figures(watch) + _against(*self.adopted_figure(lever_id))


def _x(value) -> str:
    return f"{value:.2f}×" if isinstance(value, (int, float)) else "?"


def _figures(watch: dict) -> str:
    bounds = (f" [{watch['ci_low']:.2f}, {watch['ci_high']:.2f}]" if isinstance(watch.get("ci_low"), (int, float))
              and isinstance(watch.get("ci_high"), (int, float)) else "")
    commit = f" (commit {str(watch['commit'])[:7]})" if watch.get("commit") else ""
    return f"{_x(watch.get('estimate'))}{bounds} at run {watch.get('run')}{commit}"


def _against(estimate, run, commit) -> str:
    if estimate is None:
        return ""
    where = f" at run {run}" if run is not None else " (the plan's figure)"
    return f" against {_x(estimate)} when adopted{where}" + (f" ({str(commit)[:7]})" if commit else "")
