"""Estimates, states and marks as short plain text, shared by the table, the detail pane and the graph."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from optseq.console.words.branch_words import UNMERGED, unmerged
from optseq.state.api import run_stats  # one reading of a run's statistics, shared with the export
from optseq.state.api import at_ci_size
from optseq.state.api import ratio_text

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus

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


def estimate_text(stats: dict | None, prior: float | None = None, wide: bool = False) -> str:
    """`1.42× [1.31,1.55]`, `1.42×` without a CI, the plan's prior figure, or `-`. A figure from the reference
    workload at CI size says so: `149× at CI size` in the table (no room for the interval too), with `wide` both."""
    stats = stats or {}
    estimate, low, high = (_number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high"))
    if estimate is None:
        planned = _number(prior)
        return f"{ratio(planned)}× (plan)" if planned is not None else "-"
    size = " at CI size" if at_ci_size(stats) else ""
    if low is None or high is None or (size and not wide):
        return f"{ratio(estimate)}×{size}"
    return f"{ratio(estimate)}× [{ratio(low)},{ratio(high)}]{size}"


def measured_stats(view: LeverStatus, runs: list[dict]) -> dict | None:
    """The statistics the lever's figures rest on, as the hours-saved calculus picks them (state/calculus/inputs.py):
    its newest run with an estimate, else its decision's; None when only the plan's prior is there."""
    for run in sorted(runs, key=lambda r: r.get("id", 0), reverse=True):
        stats = run_stats(run)
        if _number(stats.get("estimate")) is not None:
            return stats
    decided = (view.decision or {}).get("stats")
    return decided if isinstance(decided, dict) else None


def last_estimate(view: LeverStatus, runs: list[dict], prior: float | None) -> str:
    """The lever's newest figure: its last run with statistics, else its decision's, else the plan's."""
    for run in sorted(runs, key=lambda r: r.get("id", 0), reverse=True):
        stats = run_stats(run)
        if _number(stats.get("estimate")) is not None:
            return estimate_text(stats)
        summary = run.get("summary")
        if isinstance(summary, dict) and summary.get("chosen"):
            return f"chose {summary['chosen']}"
    decision = view.decision or {}
    if decision.get("stats"):
        return estimate_text(decision["stats"])
    return estimate_text(None, prior)


def run_line(run: dict) -> str:
    """One run as a line: id, outcome, when, figure, what it counted, each arm's median (IQR), why / noise."""
    # the statistics module and its dataclasses where a run is listed: the first screen of a store without
    # runs of the selected lever lists none
    from optseq.state.api import arms_text

    stats = run_stats(run)
    figure = estimate_text(stats, wide=True) if stats else ""
    summary = _summary(run)
    if summary.get("chosen"):
        figure = f"chose {summary['chosen']}"
    parts = [f"#{run.get('id')}", outcome_text(run), when_text(run), figure, units_text(stats),
             arms_text(stats, names=True), duration_text(run), run_note(run)]
    return "  ".join(p for p in parts if p)


def _summary(run: dict) -> dict:
    return found if isinstance(found := run.get("summary"), dict) else {}


def when_text(run: dict) -> str:
    """`2026-11-01 10:00`: when the run started, to the minute."""
    return str(run.get("started") or "")[:16].replace("T", " ")


def outcome_text(run: dict) -> str:
    """What the run came to: adopt, reject, inconclusive, a chosen config; or how it ended (failed, timeout...)."""
    status = str(run.get("status") or "")
    if status == "succeeded":
        return str(run.get("verdict") or _summary(run).get("chosen") or status)
    return status or "-"


def noise_text(run: dict) -> str:
    """The run's busy-machine or noisy-baseline line (state/runs/run_record.py noise_line), or ''."""
    return str(run_stats(run).get("noise") or _summary(run).get("noise") or "")


def run_note(run: dict) -> str:
    """Why a run ended as it did when the outcome alone does not say: a failure's detail, an undecided run's
    reason; then its noise warning. One line."""
    summary, status = _summary(run), run.get("status")
    verdict = found if isinstance(found := summary.get("verdict"), dict) else {}
    if status not in ("succeeded", "running", "queued"):
        why = str(run.get("reason") or run.get("detail") or "")
        last = last_error_line(run.get("log_tail"))
        if status == "failed" and last and last not in why:
            why = f"{why}: {last}" if why else last
    elif summary.get("error"):
        why = f"not judged: {summary['error']}"
    elif run.get("verdict") == "inconclusive":
        # the rule's reason repeats the figures the row shows already: its conclusion is what is left
        why = str(verdict.get("reason") or "")
        metric = str(run_stats(run).get("metric") or "")
        if metric and why.startswith(f"{metric} ") and ": " in why:
            why = why.partition(": ")[2]
    else:
        why = ""
    notes = "; ".join(str(n) for n in run.get("notes") or ()) if isinstance(run.get("notes"), list) else ""
    return " ".join("; ".join(str(p) for p in (why, notes, noise_text(run)) if p).split())


def last_error_line(log_tail) -> str:
    """The last line a failed command printed that is not a protocol event: its error, most often."""
    for line in reversed(log_tail if isinstance(log_tail, list) else []):
        text = str(line).strip()
        if text and not text.startswith("{") and not text.startswith("[optseq]"):
            return text
    return ""


def duration_text(run: dict) -> str:
    """`42 s`, `3 min 12 s`, `1 h 05 min`: from the run's start to its end; '' while it runs or without both."""
    import datetime as dt

    seconds = run.get("elapsed_s")  # the monotonic length, where the run kept it
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        try:
            seconds = (dt.datetime.fromisoformat(str(run["ended"])) - dt.datetime.fromisoformat(str(run["started"]))
                       ).total_seconds()
        except (KeyError, TypeError, ValueError):
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


def units_text(stats: dict | None) -> str:
    """What a run's test counted: `12 pairs in 6 launches`, or `14 pairs` where each arm run is its own process."""
    stats = stats or {}
    n = stats.get("n")
    if not isinstance(n, int) or not n:
        return ""
    pairs = f"{n} pair{'s' * (n != 1)}"
    launches = stats.get("launches")
    if stats.get("replicate") == "launch" and isinstance(launches, int):
        return f"{pairs} in {launches} launch{'es' * (launches != 1)}"
    return pairs


def saved_line(view: LeverStatus, runs: list[dict]) -> str:
    """`saved: 35.8 h expected, from 149× measured at CI size (the reference workload, not the plan's)`: the
    table's saved h with what it was worked out from; '' before the calculus ran or where it has no figure."""
    hours = view.saved
    if hours is None or _number(hours) is None:
        return ""
    from optseq.state.api import fmt_h  # with the calculus that filled the figure

    stats = measured_stats(view, runs) or {}
    if _number(stats.get("estimate")) is None:
        return f"saved: {fmt_h(hours)} h expected, from the plan's figures"
    where = " at CI size (the reference workload, not the plan's)" if at_ci_size(stats) else ""
    return f"saved: {fmt_h(hours)} h expected, from {ratio(float(stats['estimate']))}× measured{where}"
