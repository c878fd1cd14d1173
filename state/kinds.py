"""The words records switch on, each defined once: a lever's state, a run's status, and the verdict of each kind of
run (a lever's run, a watch, a compare, a screen).

They are `StrEnum`s: a member is its string, so a stored record, a JSON answer and a message keep the exact words
they always had, and a string read back from the store compares equal to its member. The order of each enum's
members is the order the store's refusals list them in ("one of running, queued, …").
"""
from __future__ import annotations

from enum import StrEnum


class LeverState(StrEnum):
    """Where a lever stands in the lever machine (state/lifecycle/states.py holds its moves)."""

    UNPLANNED = "unplanned"
    BLOCKED = "blocked"
    READY = "ready"
    RUNNING = "running"
    MEASURED = "measured"
    ADOPTED = "adopted"
    REJECTED = "rejected"
    DEFERRED = "deferred"
    DECIDED = "decided"
    STALE = "stale"
    CLOSED = "closed"


class RunStatus(StrEnum):
    """A run record's status: in flight (running, queued), then how it ended."""

    RUNNING = "running"
    QUEUED = "queued"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    """The infrastructure lost the run (a remote runner's node died), never the lever's failure."""
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"


IN_FLIGHT = (RunStatus.RUNNING, RunStatus.QUEUED)
ENDED = tuple(s for s in RunStatus if s not in IN_FLIGHT)
"""How a run may end: what a runner's outcome says, and a run record's status once it is no longer in flight."""


class LeverVerdict(StrEnum):
    """A lever run's verdict: the A/B rule's outcome. An experiment's run says the config it chose instead (a name
    from the plan), or inconclusive."""

    ADOPT = "adopt"
    REJECT = "reject"
    INCONCLUSIVE = "inconclusive"


class WatchVerdict(StrEnum):
    """A watch's verdict (`optseq --run watch`): what the rule's outcome on today's code says of the adopted gain."""

    HOLDS = "holds"
    ERODED = "eroded"
    INCONCLUSIVE = "inconclusive"

    @classmethod
    def of(cls, outcome: str) -> WatchVerdict:
        """The watch's verdict for the rule's outcome (a LeverVerdict's string)."""
        return _WATCH_OF[LeverVerdict(outcome)]


class CompareVerdict(StrEnum):
    """`optseq compare`'s verdict: the rule's outcome under the gate's names, or a guard that failed, or no
    measurement."""

    NOT_SLOWER = "not slower"
    SLOWER = "slower"
    INCONCLUSIVE = "inconclusive"
    GUARD = "guard"
    FAILED = "failed"

    @classmethod
    def of(cls, outcome: str, guard_failed: bool = False) -> CompareVerdict:
        """The gate's verdict for the rule's outcome; a failed guard is its own verdict, whatever the speed."""
        return cls.GUARD if guard_failed else _COMPARE_OF[LeverVerdict(outcome)]


class ScreenVerdict(StrEnum):
    """A screen's verdict on each of its levers (kept in its record's `screen.verdicts`, given to each lever's move)."""

    ADOPT = "adopt"
    REJECT = "reject"
    INCONCLUSIVE = "inconclusive"


_WATCH_OF = {LeverVerdict.ADOPT: WatchVerdict.HOLDS, LeverVerdict.REJECT: WatchVerdict.ERODED,
             LeverVerdict.INCONCLUSIVE: WatchVerdict.INCONCLUSIVE}
_COMPARE_OF = {LeverVerdict.ADOPT: CompareVerdict.NOT_SLOWER, LeverVerdict.REJECT: CompareVerdict.SLOWER,
               LeverVerdict.INCONCLUSIVE: CompareVerdict.INCONCLUSIVE}


__all__ = ["LeverState", "RunStatus", "IN_FLIGHT", "ENDED", "LeverVerdict", "WatchVerdict", "CompareVerdict",
           "ScreenVerdict"]
