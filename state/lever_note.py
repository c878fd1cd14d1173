"""A lever's one-line why / note, as `optseq status` and the console's table show it: why it is blocked, else its
last failure, where its numbers came from, an eroded gain, its branch, staleness, or its warnings."""
from __future__ import annotations

from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.lifecycle.states import LeverModel
from optseq.state.view_types import LeverStatus


def remeasured(model: LeverModel) -> str | None:
    """`re-measured inconclusive in run 12: CI straddles 1.10×; was adopt` while that leaves it measured."""
    cleared = model.cleared
    if model.state != "measured" or cleared is None or cleared.run is None:
        return None
    return f"{cleared.why}; was {cleared.outcome}"


def last_verdict(model: LeverModel) -> str | None:
    run = model.last_run
    if run is None or run.verdict != "inconclusive":
        return None
    return f"inconclusive in run {run.id}" + (f": {run.reason}" if run.reason else "")


def note(view: LeverStatus) -> str:
    """The one-line why / note of `optseq status`: a failed last run first, until a run or decision follows it."""
    if view.why_blocked:
        return "; ".join(view.why_blocked)
    parts = [view.last_failure] if view.last_failure else []
    parts += [view.testbed_note] if view.testbed_note else []  # state/testbed_views.py
    if view.eroded:
        parts.append(view.eroded)
    if view.branch and view.branch.text:
        parts.append(view.branch.text)
    if view.stale_reason:
        parts.append(view.stale_reason)
    elif view.unavailable:
        parts.append(f"unavailable: {view.unavailable.reason} (run {view.unavailable.run})")
    elif view.remeasured:
        parts.append(view.remeasured)
    else:
        parts += view.warnings
    return "; ".join(parts)


ENDED_BADLY = ("failed", "timeout", "cancelled", "interrupted")
"""How a run ends without figures, through no fault of the lever's speed (unavailable has its own note)."""
REASON_CHARS = 160
"""A failure's reason in the note is cut here: the run's record (`optseq runs`) has all of it."""


def last_failure(model: LeverModel, record: KeptRun | None, running: bool) -> str | None:
    """`last run 7 failed: exited 1 ...` while the lever's latest finished run ended badly and neither a run
    since (one in flight included) nor a decision made after it has superseded it."""
    run = model.last_run
    if running or run is None or run.status not in ENDED_BADLY:
        return None
    ended = record.ended if record is not None and record.id == run.id else None
    decided = model.decision.at if model.decision else None
    if ended and decided and str(decided) >= str(ended):  # the store's times are to the second: a tie is later
        return None
    reason = " ".join(str(run.reason or "").split())
    if reason == run.status:  # `cancelled: cancelled` said it twice
        reason = ""
    if len(reason) > REASON_CHARS:
        reason = reason[:REASON_CHARS - 1] + "…"
    return f"last run {run.id} {run.status}" + (f": {reason}" if reason else "")
