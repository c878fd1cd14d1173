"""Estimates, states and marks as short plain text, shared by the table, the detail pane and the graph."""
from __future__ import annotations

import math
from typing import Any

from optseq.state.lifecycle.history_points import run_stats  # one reading of a run's statistics, shared with the export

STATE_MARK = {"ready": "ready", "running": "running", "measured": "measured", "stale": "stale",
              "blocked": "blocked", "unplanned": "blocked", "closed": "closed",
              "adopted": "decided", "rejected": "decided", "deferred": "decided", "decided": "decided"}
"""The graph's mark for each machine state; words, so NO_COLOR loses nothing. `measured` is its own mark:
it has numbers but no decision, which `ready` would contradict."""


def plain_title(title: str) -> str:
    """The plan's markdown title without its bold markers."""
    return title.replace("**", "")


def state_text(view: dict) -> str:
    """`decided NO-GO`, `adopted`, `blocked`… : the state, with the outcome when it is not implied."""
    state, outcome = view["state"], view.get("outcome")
    implied = {"adopted": "adopt", "rejected": "reject", "deferred": "defer"}
    if outcome and implied.get(state) != outcome:
        return f"{state} {outcome}"
    return state


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def ratio(value: float) -> str:
    """Three significant figures or so, never wider than a small ratio: 1.42, 87.6, 120."""
    if abs(value) < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def estimate_text(stats: dict | None, prior: float | None = None) -> str:
    """`1.42× [1.31,1.55]`, `1.42×` without a CI, the plan's prior figure, or `-`."""
    stats = stats or {}
    estimate, low, high = (_number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high"))
    if estimate is None:
        return f"{ratio(prior)}× (plan)" if _number(prior) is not None else "-"
    if low is None or high is None:
        return f"{ratio(estimate)}×"
    return f"{ratio(estimate)}× [{ratio(low)},{ratio(high)}]"


def last_estimate(view: dict, runs: list[dict], prior: float | None) -> str:
    """The lever's newest figure: its last run with statistics, else its decision's, else the plan's."""
    for run in sorted(runs, key=lambda r: r.get("id", 0), reverse=True):
        stats = run_stats(run)
        if _number(stats.get("estimate")) is not None:
            return estimate_text(stats)
        summary = run.get("summary")
        if isinstance(summary, dict) and summary.get("chosen"):
            return f"chose {summary['chosen']}"
    decision = view.get("decision") or {}
    if decision.get("stats"):
        return estimate_text(decision["stats"])
    return estimate_text(None, prior)


def run_line(run: dict) -> str:
    """One run as a line: id, status, when, figure, message."""
    stats = run_stats(run)
    figure = estimate_text(stats) if stats else ""
    summary = run.get("summary") if isinstance(run.get("summary"), dict) else {}
    if summary.get("chosen"):
        figure = f"chose {summary['chosen']}"
    when = str(run.get("started") or "")[:16].replace("T", " ")
    parts = [f"#{run.get('id')}", str(run.get("status")), when, figure, units_text(stats),
             str(run.get("detail") or run.get("reason") or "")]
    return "  ".join(p for p in parts if p)


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
