"""What the lever machine keeps of a lever beside its state, as types: its last run, why its decision left the
stack, why it waits for another device, its latest watch, where its branch landed; and a lever as the store's
snapshot holds it (snapshot.py), decoded in one msgspec call per snapshot.

The machine builds these as it moves (moves.py, watched.py); every reader takes their fields by name. Each is the
layout the snapshot always held for it ({id, status, verdict, reason} for a last run, …): `msgspec.to_builtins`
writes one as the old code's dict was written, field for field and in order, so a snapshot stays VERSION 1 both
ways, and a field a snapshot of an older release lacks reads as its default.
"""

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from optseq.state.kinds import LeverState, RunStatus, WatchVerdict
from optseq.state.lifecycle.fields import Said  # kept as the JSON it is: a said's fields may hold saids in turn, and
# the store's events and the derived events carry it as such
from optseq.state.record_types import Decision


class _Kept(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A part of a lever the machine keeps (a snapshot of a newer release may add keys: they are not read)."""


class LastRun(_Kept, frozen=True):
    """A lever's latest finished run, as its move read it: `said`, the rule's reason as runs/words says it, where
    the rule kept one (the export's language)."""
    id: int | None = None
    status: RunStatus | None = None
    verdict: str | None = None  # a LeverVerdict's string, or the config an experiment's run chose
    reason: str = ""
    said: Said | UnsetType = UNSET


class SavedCleared(_Kept, frozen=True):
    """A cleared decision as the snapshot keeps it: the decision as the store gave it out."""
    decision: dict[str, Any] | None = None
    outcome: str | None = None
    why: str | None = None
    run: int | None = None


class Cleared(_Kept, frozen=True):
    """The decision that left the stack without a new one (a closed branch, an inconclusive re-measure): the export
    says "was …" of it, and a new decision supersedes it. `decision_stored`: the decision as the store gave it out,
    which the snapshot keeps (as LeverModel.decision_stored)."""
    decision: Decision | None = None
    outcome: str | None = None
    why: str | None = None
    run: int | None = None
    decision_stored: dict[str, Any] | None = None

    @classmethod
    def saved(cls, saved: SavedCleared) -> "Cleared":
        decision = None if saved.decision is None else msgspec.convert(saved.decision, Decision)
        return cls(decision=decision, outcome=saved.outcome, why=saved.why, run=saved.run,
                   decision_stored=saved.decision)

    def to_saved(self) -> SavedCleared:
        return SavedCleared(decision=self.decision_stored, outcome=self.outcome, why=self.why, run=self.run)


class Unavailable(_Kept, frozen=True):
    """A lever whose last run was `unavailable`: `next` skips it until a run names another device."""
    reason: str | None = None
    run: int | None = None
    device: str | None = None


class Watch(_Kept, frozen=True):
    """The latest watch of a standing adopt (`optseq --run watch`): what it found of the adopted gain, on which
    commit. `estimate` and its bounds are the run's paired statistics, None where it kept none."""
    run: int | None = None
    verdict: WatchVerdict | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    commit: str | None = None
    at: str | None = None


class Landed(_Kept, frozen=True):
    """An adopted branch lever whose commit is in the baseline's history (its `landed` event)."""
    commit: str | None = None
    since: str | None = None
    at: str | None = None


class SavedLever(_Kept, frozen=True):
    """A lever as a snapshot holds it (snapshot.FIELDS, then `state` and `results`). `decision` is the store's
    record as it was stored (status --json passes it on whole); a field an older snapshot lacks reads as None, as
    the old loader's `.get` read it."""
    state: LeverState
    plan_doc: str | None = None
    outcome: str | None = None
    decision_seq: int | None = None
    decision: dict[str, Any] | None = None
    stale_reason: str | None = None
    stale_said: Said | None = None
    closed_by: str | None = None
    closed_said: Said | None = None
    closed_by_lever: str | None = None
    origin: str | None = None
    cleared: SavedCleared | None = None
    last_run: LastRun | None = None
    unavailable: Unavailable | None = None
    landed: Landed | None = None
    watch: Watch | None = None
    results: list[tuple[str, str, str, str | None]] | None = None


__all__ = ["Said", "LastRun", "Cleared", "SavedCleared", "Unavailable", "Watch", "Landed", "SavedLever"]
