"""What makes a measurement stale: the stack it was measured on, a lever leaving that stack, and a decision
that a lever's remeasure_when names."""
from __future__ import annotations

from optseq.state.kinds import LeverState
from optseq.state.plan import gates
from optseq.state.plan.definition import changed
from optseq.state.lifecycle.board import Board, Effects
from optseq.state.lifecycle.fields import Said
from optseq.state.lifecycle.standing import Standing
from optseq.state.lifecycle.states import DECIDED, LeverModel
from optseq.state.lifecycle.words import say, text, unmet

_STANDS_ON_RUNS = (*DECIDED, LeverState.MEASURED)
"""States whose numbers stand on a run: what can go stale."""


def stands_on_runs(model: LeverModel) -> bool:
    """A lever whose numbers stand on runs of its own: decided or measured, with a run command."""
    return model.state in _STANDS_ON_RUNS and bool(model.lever.run)


class Staleness:
    """Marks levers stale, on the board, with the derived `stale` events that say why."""

    def __init__(self, board: Board, standing: Standing, effects: Effects) -> None:
        self.board, self.standing, self.effects = board, standing, effects

    def remeasure(self, lever_id: str, outcome: str, seq: int, before: dict[str, str],
                  cause: Said | None = None) -> None:
        """A decision of a lever that others name in remeasure_when makes their earlier measured decisions stale
        (`cause` says what moved it, where not its decision: a branch that landed)."""
        # a decision that keeps this lever out of the stack (a reject or defer of a lever not in it) changes
        # nothing a measurement stood on; one that puts it in, takes it out or re-decides it there (a new
        # version adopted again) asks a re-measure
        moved = lever_id in before or lever_id in self.standing.stack()
        for other in self.board.models.values():
            # a measured (inconclusive) lever was measured before this decision: its numbers are as old
            measured = other.state == LeverState.MEASURED or (
                other.state in DECIDED and other.decision_seq is not None and other.decision_seq < seq)
            if moved and lever_id in other.lever.remeasure_when and measured and other.lever.run:
                why = cause or say("decided", lever=lever_id, outcome=outcome)
                self.stale(other, say("after_measured", cause=why, lever=other.lever.id))

    def edited(self) -> None:
        """A lever whose numbers were measured on another definition of it (the plan was edited since) is stale,
        naming what changed; runs from before definitions were kept are taken as they are."""
        for model in self.board.models.values():
            if not stands_on_runs(model):
                continue
            for run_id in self.standing.evidence(model.lever.id):
                before = self.board.runs.fingerprint(run_id).get("definition")
                parts = changed(before, self.board.definitions[model.lever.id]) if isinstance(before, dict) else []
                if parts:
                    self.stale(model, say("plan_changed", lever=model.lever.id, parts=parts, run=run_id))
                    break

    def stale(self, model: LeverModel, said: Said) -> None:
        """`said`: why, as lifecycle/words says it; its English is the reason status prints."""
        model.stale_reason, model.stale_said = text(said), said
        model.invalidate()
        self.effects.add({"type": "stale", "lever": model.lever.id, "reason": model.stale_reason, "said": said,
                          "derived": True})

    def left_stack(self, before: dict[str, str], cause: Said) -> None:
        """Whatever was measured with a lever that has left the stack goes stale (its baseline had it), and a
        decided lever gated on it that lost its gate too."""
        after = self.standing.stack()
        ctx = self.standing.context()
        for gone, outcome in before.items():
            if gone in after:
                continue
            for other in self.board.models.values():
                if other.lever.id == gone or not stands_on_runs(other):
                    continue
                run = self.measured_with(other, gone, outcome)
                if run is not None:
                    self.stale(other, say("left_stack_run", gone=gone, cause=cause, lever=other.lever.id, run=run))
                elif (gone in {a.lever for a in gates.atoms(other.lever.requires)}
                      and not gates.holds(other.lever.requires, ctx)):
                    self.stale(other, say("left_stack_gate", gone=gone, cause=cause,
                                          reasons=unmet(other.lever.requires, ctx)))

    def measured_with(self, model: LeverModel, gone: str, outcome: str) -> int | None:
        """The first evidence run of `model`'s decision (a measured lever's: its last run) whose stack held `gone`
        (its adoption or its config)."""
        experiment = self.board.models[gone].lever.kind == "experiment"
        for run_id in self.standing.evidence(model.lever.id):
            infra = self.board.runs.infra(run_id)
            if infra is None:
                continue
            if gone in (infra.get("adopted") or ()):
                return run_id
            if experiment and (infra.get("model") or {}).get("name") == outcome:
                return run_id
        return None
