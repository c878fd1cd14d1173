"""The workload's code as it moved since the runs a lever's numbers stand on: a writer says so as it opens (and the
console when it refreshes), as `stale` events under `code_changes = "stale"` and as branch levers' `landed` /
`stale` events (state/code/landing.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optseq.state.held import Held
from optseq.state.lifecycle.states import DECIDED
from optseq.state.lifecycle.words import say, text
from optseq.state.views import code_moved, evidence_runs
from optseq.state.writes import Writer


class CodeMoves:
    """Appends the events the code's moves call for, through the writer; git is asked through the views' cache."""

    def __init__(self, held: Held, writer: Writer, repo_now: Callable[[str], dict[str, Any] | None]):
        self.held = held
        self.writer = writer
        self.repo_now = repo_now
        """A repository's state now, asked of git once per process and store change (ReadViews.repo_now)."""

    def staleness(self) -> None:
        """With `code_changes = "stale"`, a lever whose workload code moved since its run goes stale, naming how."""
        machine = self.held.machine
        moved = []
        for lever_id, model in machine.models.items():
            if model.state not in (*DECIDED, "measured"):
                continue
            for run_id in evidence_runs(model):
                was = machine.runs.fingerprint(run_id).get("repo")
                how = code_moved(was, self.repo_now(was["root"])) if isinstance(was, dict) else None
                if how:
                    moved.append((lever_id, say("code_changed", run=run_id, how=how)))
                    break
        if moved:
            with self.writer.writing():
                for lever_id, said in moved:
                    self.writer.append("events", {"type": "stale", "lever": lever_id, "reason": text(said),
                                                  "said": said})

    def branch_moves(self) -> list[dict[str, Any]]:
        """Branch levers whose code moved since their run: an adopted commit merged (`landed`) or taken out again,
        a branch or base that moved (`stale`); the events are appended, and returned. Git is asked first without
        the store's lock, and again under it only when something moved (another process may have said it)."""
        held = self.held
        if held.readonly or not any(l.arms is not None and l.arms.branch for l in held.plan.levers):
            return []
        from optseq.state.code import landing

        held.forget_git()  # what the views asked git (a baseline that moved) is asked again

        if not landing.events(held.machine, held.plan):
            return []
        with self.writer.writing():
            found = landing.events(held.machine, held.plan)
            for event in found:
                self.writer.append("events", event)
        return found
