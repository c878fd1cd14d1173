"""A lever's states, the `transitions` table between them, and LeverModel, the object they move."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optseq.state.kinds import LeverState
from optseq.state.lifecycle.lever_records import Cleared, Landed, LastRun, Said, Unavailable, Watch
from optseq.state.plan.model import Lever
from optseq.state.record_types import Decision

if TYPE_CHECKING:  # a command that only reads never imports transitions (see LeverModel)
    from transitions.core import TransitionConfigDict

_S = LeverState


def _words(*states: LeverState) -> list[str]:
    return [s.value for s in states]


STATES = _words(*LeverState)
"""The machine's states as `transitions` takes them: plain strings (given Enum members it names its triggers, checks
and states after the members' names, `is_READY`), so `LeverModel.state` is the string its LeverState equals."""
DECIDED = _words(_S.ADOPTED, _S.REJECTED, _S.DEFERRED, _S.DECIDED)
RUNNABLE = _words(_S.READY, _S.MEASURED, _S.STALE, _S.ADOPTED, _S.REJECTED, _S.DEFERRED)
"""States a run may start from; a run from a decided state re-measures it."""
DECIDABLE = _words(_S.BLOCKED, _S.UNPLANNED, _S.READY, _S.MEASURED, _S.STALE, _S.ADOPTED, _S.REJECTED, _S.DEFERRED,
                   _S.DECIDED)
OUTCOME_TRIGGER = {"adopt": "adopt", "reject": "reject", "defer": "defer"}
"""Outcomes with their own state; every other outcome (GO, NO-GO, a config) ends in `decided`."""

_MOVES: list[TransitionConfigDict] = [
    {"trigger": "gates_met", "source": "blocked", "dest": "unplanned", "conditions": "needs_plan"},
    {"trigger": "gates_met", "source": "blocked", "dest": "ready"},
    {"trigger": "gates_lost", "source": ["ready", "unplanned"], "dest": "blocked"},
    {"trigger": "plan_written", "source": "unplanned", "dest": "ready"},
    {"trigger": "start", "source": RUNNABLE, "dest": "running", "before": "remember_origin"},
    {"trigger": "finish", "source": "running", "dest": "measured"},
    {"trigger": "adopt", "source": DECIDABLE, "dest": "adopted"},
    {"trigger": "reject", "source": DECIDABLE, "dest": "rejected"},
    {"trigger": "defer", "source": DECIDABLE, "dest": "deferred"},
    {"trigger": "decide", "source": DECIDABLE, "dest": "decided"},
    # a measured (inconclusive) lever's numbers go stale as a decided one's do: its re-measure is as due
    {"trigger": "invalidate", "source": DECIDED + ["measured"], "dest": "stale"},
    # a branch closes whatever is on it, decided or not; its decisions leave the stack (see _close)
    {"trigger": "close", "source": [s for s in STATES if s != "closed"], "dest": "closed"},
    # a reversal of the gate that closed it opens the lever again, from scratch: its gates decide where to
    {"trigger": "reopen", "source": "closed", "dest": "blocked"},
]
_ABORTS: list[TransitionConfigDict] = [
    # a run that ends without a result puts the lever back where it was
    {"trigger": "abort", "source": "running", "dest": origin, "conditions": f"came_from_{origin}"}
    for origin in RUNNABLE
]
TRANSITIONS = _MOVES + _ABORTS

MARK = {"adopted": "done", "decided": "done", "rejected": "rejected", "ready": "now", "running": "now",
        "measured": "now", "stale": "now", "blocked": "waiting", "unplanned": "waiting",
        "deferred": "waiting", "closed": "closed"}
"""How the doc marks a state: done ✅, now ⏳, waiting ⏸, rejected ❌, closed —."""


MACHINE_NAMES = frozenset({"trigger", "may_trigger"} | {t["trigger"] for t in TRANSITIONS}
                          | {f"may_{t['trigger']}" for t in TRANSITIONS} | {f"is_{s}" for s in STATES})
"""What `transitions` adds to a model beside `state`: the first use of one attaches the model's machine."""


class TransitionRefused(Exception):
    """An action that the lever's current state does not allow; str() is the user's one line."""


_COMPARED = ("lever", "plan_doc", "outcome", "decision_seq", "decision", "decision_stored", "stale_reason",
             "stale_said", "closed_by", "closed_said", "closed_by_lever", "origin", "cleared", "last_run",
             "unavailable", "results", "watch", "landed")


class LeverModel:
    """One lever's live state, in `state`; `transitions` adds the trigger methods when one is first called.

    A command that only reads (`optseq status`, the console's first screen from the store's snapshot) moves no
    lever: it neither imports `transitions` nor builds a machine per lever. `state` is the attribute the machine
    keeps it in, so the machine attached later starts where the model stands."""

    lever: Lever
    plan_doc: str | None = None
    outcome: str | None = None
    decision_seq: int | None = None
    decision: Decision | None = None
    decision_stored: dict[str, Any] | None = None
    """`decision` as the store gave it out: what status --json and the snapshot pass on whole (with the keys a
    reader does not name, and the nulls as stored, in its maker's key order: no one Struct writes both a stored
    decision's, `id` first, and a plan prior's, `source` first). Readers read `decision`."""
    stale_reason: str = ""
    stale_said: Said | None = None
    """stale_reason as lifecycle/words says it, for the export's language; None where the reason came without one
    (a stack change, a record of an older release)."""
    closed_by: str = ""
    closed_said: Said | None = None
    """closed_by as lifecycle/words says it (as stale_said)."""
    closed_by_lever: str = ""
    """The lever whose decision closed this one: a later decision of that lever reopens it."""
    origin: str = ""
    cleared: Cleared | None = None
    """The decision that left the stack without a new one (closed branch, inconclusive re-measure); the export
    says "was …" with it and a new decision supersedes it."""
    last_run: LastRun | None = None
    """The latest finished run."""
    unavailable: Unavailable | None = None
    """While the last run was `unavailable`: skipped by `next` until the device changes."""
    results: dict[tuple[str, str], tuple[str, str | None]]
    """(candidate, criterion) -> (pass|fail, evidence)."""
    watch: Watch | None = None
    """The latest watch of the standing adopt (`optseq --run watch`). An eroded gain stays in the stack until the
    user decides."""
    landed: Landed | None = None
    """An adopted branch lever whose commit is in the baseline's history. Until then its decision is not in
    effect: it is not in the stack, and no gate on it holds."""

    state: str
    """Where the lever stands (the machine's initial state until one moves it)."""

    # a plain class, not a dataclass: `status` builds one per lever and imports nothing more for it (the
    # dataclasses module and the code it generates were a tenth of what status spends beyond Python's start)
    def __init__(self, lever: Lever, plan_doc: str | None = None, *, state: str = "blocked") -> None:
        self.lever = lever
        self.plan_doc = plan_doc
        self.outcome = self.decision_seq = self.decision = self.decision_stored = None
        self.stale_reason, self.stale_said = "", None
        self.closed_by, self.closed_said, self.closed_by_lever = "", None, ""
        self.origin = ""
        self.cleared = self.last_run = self.unavailable = self.watch = self.landed = None
        self.results = {}
        self.state = state

    def __repr__(self) -> str:
        return f"LeverModel({self.lever.id!r}, state={self.state!r}, outcome={self.outcome!r})"

    def __eq__(self, other: object) -> bool:
        """The same lever with the same standing (a snapshot's load against a replay): every field but `state`,
        which the machine keeps and its callers compare on its own."""
        if not isinstance(other, LeverModel):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _COMPARED)

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as the dataclass it was

    def __getattr__(self, name: str):
        # called only for what the instance lacks: a trigger (or is_/may_) before the machine is attached
        if name not in MACHINE_NAMES or self.__dict__.get("_machine"):  # attached: what it lacks, it lacks
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        from transitions import Machine

        self.__dict__["_machine"] = True  # before: the machine looks for each name before it adds it
        Machine(model=self, states=STATES, transitions=TRANSITIONS, initial=self.state, auto_transitions=False,
                send_event=False)
        return getattr(self, name)

    def needs_plan(self) -> bool:
        return self.plan_doc is None and self.lever.needs_plan

    def remember_origin(self) -> None:
        self.origin = self.state

    @property
    def last_decision(self) -> Decision | None:
        """The current decision, or the one that left the stack: what a new decision supersedes."""
        return self.decision or (self.cleared.decision if self.cleared else None)

    def clear_decision(self, why: str, run: int | None = None) -> None:
        """Take the lever out of the stack; its decision stays in the store's history."""
        if self.outcome is not None:
            self.cleared = Cleared(decision=self.decision, outcome=self.outcome, why=why, run=run,
                                   decision_stored=self.decision_stored)
        self.outcome = self.decision = self.decision_seq = self.decision_stored = None
        self.stale_reason, self.stale_said = "", None
        self.landed = self.watch = None


for _origin in RUNNABLE:
    setattr(LeverModel, f"came_from_{_origin}", lambda self, _o=_origin: self.origin == _o)


__all__ = ["LeverModel", "TransitionRefused", "STATES", "DECIDED", "MARK"]
