"""What makes a measurement stale: the stack it was measured on, a lever leaving that stack, and a decision
that a lever's remeasure_when names; as methods of PlanMachine."""
from __future__ import annotations

from optseq.state.plan import gates
from optseq.state.plan.definition import changed
from optseq.state.lifecycle.states import DECIDED, LeverModel
from optseq.state.lifecycle.words import say, text, unmet


class Staleness:
    """Uses the machine's `models`, `runs` and `context()`; derived stale events go to `effects`."""

    def _model_source(self) -> str | None:
        """The experiment whose chosen config is the model of the stack (the last decided one in plan order)."""
        source = None
        for lid, m in self.models.items():
            if m.lever.kind == "experiment" and m.outcome not in (None, "defer") and m.decision:
                source = lid
        return source

    def _stack(self) -> dict[str, str]:
        """lever -> outcome of every lever in the stack (the adopted ones and the model's experiment)."""
        stack = {lid: "adopt" for lid in self.models if self.in_stack(lid)}
        source = self._model_source()
        if source:
            stack[source] = self.models[source].outcome
        return stack

    def _remeasure(self, lever_id: str, outcome: str, seq: int, before: dict[str, str],
                   cause: dict | None = None) -> None:
        """A decision of a lever that others name in remeasure_when makes their earlier measured decisions stale
        (`cause` says what moved it, where not its decision: a branch that landed)."""
        # a decision that keeps this lever out of the stack (a reject or defer of a lever not in it) changes
        # nothing a measurement stood on; one that puts it in, takes it out or re-decides it there (a new
        # version adopted again) asks a re-measure
        moved = lever_id in before or lever_id in self._stack()
        for other in self.models.values():
            # a measured (inconclusive) lever was measured before this decision: its numbers are as old
            measured = other.state == "measured" or (other.state in DECIDED and other.decision_seq is not None
                                                      and other.decision_seq < seq)
            if moved and lever_id in other.lever.remeasure_when and measured and other.lever.run:
                why = cause or say("decided", lever=lever_id, outcome=outcome)
                self._stale(other, say("after_measured", cause=why, lever=other.lever.id))

    def _edited(self) -> None:
        """A lever whose numbers were measured on another definition of it (the plan was edited since) is stale,
        naming what changed; runs from before definitions were kept are taken as they are."""
        for model in self.models.values():
            if model.state not in (*DECIDED, "measured") or not model.lever.run:
                continue
            runs = (model.decision or {}).get("runs") or ([model.last_run["id"]] if model.state == "measured"
                                                          and model.last_run else [])
            for run_id in runs:
                before = self.runs.fingerprint(run_id).get("definition")
                parts = changed(before, self.definitions[model.lever.id]) if isinstance(before, dict) else []
                if parts:
                    self._stale(model, say("plan_changed", lever=model.lever.id, parts=parts, run=run_id))
                    break

    def _stale(self, model: LeverModel, said: dict) -> None:
        """`said`: why, as lifecycle/words says it; its English is the reason status prints."""
        model.stale_reason, model.stale_said = text(said), said
        model.invalidate()
        self.effects.append({"type": "stale", "lever": model.lever.id, "reason": model.stale_reason, "said": said,
                             "derived": True})

    def _left_stack(self, before: dict[str, str], cause: dict) -> None:
        """Whatever was measured with a lever that has left the stack goes stale (its baseline had it), and a
        decided lever gated on it that lost its gate too."""
        after = self._stack()
        ctx = self.context()
        for gone, outcome in before.items():
            if gone in after:
                continue
            for other in self.models.values():
                if other.lever.id == gone or other.state not in (*DECIDED, "measured") or not other.lever.run:
                    continue
                run = self._measured_with(other, gone, outcome)
                if run is not None:
                    self._stale(other, say("left_stack_run", gone=gone, cause=cause, lever=other.lever.id, run=run))
                elif (gone in {a.lever for a in gates.atoms(other.lever.requires)}
                      and not gates.holds(other.lever.requires, ctx)):
                    self._stale(other, say("left_stack_gate", gone=gone, cause=cause,
                                           reasons=unmet(other.lever.requires, ctx)))

    def _measured_with(self, model: LeverModel, gone: str, outcome: str):
        """The first evidence run of `model`'s decision (a measured lever's: its last run) whose stack held `gone`
        (its adoption or its config)."""
        experiment = self.models[gone].lever.kind == "experiment"
        evidence = (model.decision or {}).get("runs") or ([model.last_run["id"]] if model.state == "measured"
                                                           and model.last_run else [])
        for run_id in evidence:
            infra = self.runs.infra(run_id)
            if infra is None:
                continue
            if gone in (infra.get("adopted") or ()):
                return run_id
            if experiment and (infra.get("model") or {}).get("name") == outcome:
                return run_id
        return None
