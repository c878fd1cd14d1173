"""Estimates, states and marks as short plain text, shared by the table, the detail pane and the graph."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from optseq.console.words.branch_words import UNMERGED, unmerged
from optseq.state.api import ratio_text

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus, Run, Stats

STATE_MARK = {"ready": "ready", "running": "running", "measured": "measured", "stale": "stale",
              "blocked": "blocked", "unplanned": "blocked", "closed": "closed",
              "adopted": "decided", "rejected": "decided", "deferred": "decided", "decided": "decided"}
"""The graph's mark for each machine state; words, so NO_COLOR loses nothing. `measured` is its own mark:
it has numbers but no decision, which `ready` would contradict."""


def shown_state(view: LeverStatus) -> str:
    """The table's state cell: `unmerged` for an adopted branch lever whose commit is not merged yet (the help
    screen says what that is), else state_text."""
    return UNMERGED if unmerged(view) else state_text(view)


ERODED = "eroded"
"""The table's state and the graph's mark for an adopted lever whose gain a watch found gone: still in the stack
(nothing leaves it silently), and `adopted` alone would say its gain stands."""


def mark_of(view: LeverStatus) -> str:
    """The graph's mark: STATE_MARK's, but `unmerged` for an adopted branch not merged yet, which `decided`
    would show as done, and `eroded` for a gain a watch found gone."""
    if view.eroded and view.state == "adopted":
        return ERODED
    return UNMERGED if unmerged(view) else STATE_MARK.get(view.state, "blocked")


def plain_title(title: str) -> str:
    """The plan's markdown title without its bold markers."""
    return title.replace("**", "")


def state_text(view: LeverStatus) -> str:
    """`decided NO-GO`, `adopted`, `blocked`… : the state, with the outcome when it is not implied."""
    state, outcome = view.state, view.outcome
    if view.eroded and state == "adopted":
        return ERODED
    implied = {"adopted": "adopt", "rejected": "reject", "deferred": "defer"}
    if outcome and implied.get(state) != outcome:
        return f"{state} {outcome}"
    return state


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def ratio(value: float, decimals: int = 2) -> str:
    """The one rule every place prints a ratio by (state/text.py): 1.42, 87.6, 120, 0.0333, 4.70e4."""
    return ratio_text(value, decimals)


def estimate_text(stats: Stats | None, prior: float | None = None, wide: bool = False) -> str:
    """`1.42× [1.31,1.55]`, `1.42×` without a CI, the plan's prior figure, or `-`. A figure from the reference
    workload at CI size says so: `149× at CI size` in the table (no room for the interval too), with `wide` both."""
    estimate, low, high = ((_number(stats.estimate), _number(stats.ci_low), _number(stats.ci_high)) if stats
                           else (None, None, None))
    if estimate is None:
        planned = _number(prior)
        return f"{ratio(planned)}× (plan)" if planned is not None else "-"
    size = " at CI size" if at_ci(stats) else ""
    if low is None or high is None or (size and not wide):
        return f"{ratio(estimate)}×{size}"
    return f"{ratio(estimate)}× [{ratio(low)},{ratio(high)}]{size}"


def at_ci(stats: Stats | None) -> bool:
    """Whether the figures come from the reference workload at CI size (state/runs/measured_on.py at_ci_size)."""
    from optseq.state.api import CI_SIZE

    return stats is not None and stats.bench_size == CI_SIZE


def decision_stats(view: LeverStatus) -> Stats | None:
    """The statistics the lever's standing decision rests on, None where it has none."""
    from optseq.state.api import stats_from

    standing = view.standing
    return stats_from(standing.stats) if standing and standing.stats is not None else None


def measured_stats(view: LeverStatus, runs: Sequence[Run]) -> Stats | None:
    """The statistics the lever's figures rest on, as the hours-saved calculus picks them (state/calculus/inputs.py):
    its newest run with an estimate, else its decision's; None when only the plan's prior is there."""
    for run in sorted(runs, key=lambda r: r.id or 0, reverse=True):
        if _number(run.stats.estimate) is not None:
            return run.stats
    return decision_stats(view)


def last_estimate(view: LeverStatus, runs: Sequence[Run], prior: float | None) -> str:
    """The lever's newest figure: its last run with statistics, else its decision's, else the plan's."""
    for run in sorted(runs, key=lambda r: r.id or 0, reverse=True):
        if _number(run.stats.estimate) is not None:
            return estimate_text(run.stats)
        if run.figures.chosen:
            return f"chose {run.figures.chosen}"
    standing = view.standing
    if standing is not None and standing.stats:  # an empty {} is none
        from optseq.state.api import stats_from

        return estimate_text(stats_from(standing.stats))
    return estimate_text(None, prior)


def run_line(run: Run) -> str:
    """One run as a line: id, outcome, when, figure, what it counted, each arm's median (IQR), why / noise."""
    # the statistics module and its dataclasses where a run is listed: the first screen of a store without
    # runs of the selected lever lists none
    from optseq.state.api import arms_text

    stats = run.stats
    figure = estimate_text(stats, wide=True) if run.figures.stats is not None else ""
    if run.figures.chosen:
        figure = f"chose {run.figures.chosen}"
    parts = [f"#{run.id}", outcome_text(run), when_text(run), figure, units_text(stats),
             arms_text(stats, names=True), duration_text(run), run_note(run)]
    return "  ".join(p for p in parts if p)


def when_text(run: Run) -> str:
    """`2026-11-01 10:00`: when the run started, to the minute."""
    return str(run.started or "")[:16].replace("T", " ")


def outcome_text(run: Run) -> str:
    """What the run came to: adopt, reject, inconclusive, a chosen config; or how it ended (failed, timeout...)."""
    status = str(run.status or "")
    if status == "succeeded":
        return str((run.verdict or None) or run.figures.chosen or status)
    return status or "-"


def noise_text(run: Run) -> str:
    """The run's busy-machine or noisy-baseline line (state/runs/run_record.py noise_line), or ''."""
    return str(run.stats.noise or run.figures.noise or "")


def run_note(run: Run) -> str:
    """Why a run ended as it did when the outcome alone does not say: a failure's detail, an undecided run's
    reason; then its noise warning. One line."""
    summary, status = run.figures, run.status
    if status not in ("succeeded", "running", "queued"):
        why = str(run.reason or run.detail or "")
        last = last_error_line(run.log_tail or [])
        if status == "failed" and last and last not in why:
            why = f"{why}: {last}" if why else last
    elif summary.error:
        why = f"not judged: {summary.error}"
    elif run.verdict == "inconclusive":
        # the rule's reason repeats the figures the row shows already: its conclusion is what is left
        why = str(summary.rule_verdict.reason or "")
        metric = str(run.stats.metric or "")
        if metric and why.startswith(f"{metric} ") and ": " in why:
            why = why.partition(": ")[2]
    else:
        why = ""
    notes = "; ".join(str(n) for n in run.notes or ())
    return " ".join("; ".join(str(p) for p in (why, notes, noise_text(run)) if p).split())


def last_error_line(log_tail: Sequence[object]) -> str:
    """The last line a failed command printed that is not a protocol event: its error, most often."""
    for line in reversed(log_tail):
        text = str(line).strip()
        if text and not text.startswith("{") and not text.startswith("[optseq]"):
            return text
    return ""


def duration_text(run: Run) -> str:
    """`42 s`, `3 min 12 s`, `1 h 05 min`: from the run's start to its end; '' while it runs or without both."""
    import datetime as dt

    seconds = run.elapsed_s  # the monotonic length, where the run kept it
    if seconds is None:
        if run.ended is None or run.started is None:
            return ""
        try:
            seconds = (dt.datetime.fromisoformat(run.ended) - dt.datetime.fromisoformat(run.started)).total_seconds()
        except ValueError:
            return ""
    if seconds < 0:
        return ""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def units_text(stats: Stats) -> str:
    """What a run's test counted: `12 pairs in 6 launches`, or `14 pairs` where each arm run is its own process."""
    n = stats.n
    if not n:
        return ""
    pairs = f"{n} pair{'s' * (n != 1)}"
    launches = stats.launches
    if stats.replicate == "launch" and launches is not None:
        return f"{pairs} in {launches} launch{'es' * (launches != 1)}"
    return pairs


def saved_line(view: LeverStatus, runs: Sequence[Run]) -> str:
    """`saved: 35.8 h expected, from 149× measured at CI size (the reference workload, not the plan's)`: the
    table's saved h with what it was worked out from; '' before the calculus ran or where it has no figure."""
    hours = view.saved
    if hours is None or _number(hours) is None:
        return ""
    from optseq.state.api import fmt_h  # with the calculus that filled the figure

    stats = measured_stats(view, runs)
    estimate = _number(stats.estimate) if stats else None
    if estimate is None:
        return f"saved: {fmt_h(hours)} h expected, from the plan's figures"
    where = " at CI size (the reference workload, not the plan's)" if at_ci(stats) else ""
    return f"saved: {fmt_h(hours)} h expected, from {ratio(estimate)}× measured{where}"
