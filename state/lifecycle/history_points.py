"""A lever's estimates over its runs: what the console's history plot and the export's charts both draw.

One extraction for both, so the chart beside an export shows the same points as the console's plot.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

from optseq.state.lifecycle.fields import part

MAX_RUNS = 40
"""Newest runs plotted; more would not fit an 80-column plot anyway (the export's charts keep the same)."""

Point = tuple[int, float, float | None, float | None]
"""(run id, estimate, CI low, CI high), the bounds None where the run stored none."""


def run_stats(run: dict) -> dict:
    """The paired statistics a run stored, or {} (failed runs, experiments, decision levers)."""
    summary = run.get("summary")
    stats = summary.get("stats") if isinstance(summary, dict) else None
    return stats if isinstance(stats, dict) else {}


def points(runs: Iterable[dict]) -> list[Point]:
    """One point per run with a finite estimate, oldest first, from the newest MAX_RUNS runs.

    The window is taken over runs, not points, as the console always did: a failed run still takes
    its place among the newest. Non-finite numbers (a store edited by hand, a bad external run)
    would break a plot's scale, so they count as missing.
    """
    out: list[Point] = []
    for run in sorted(runs, key=lambda r: r.get("id") or 0)[-MAX_RUNS:]:
        stats = run_stats(run)
        estimate = finite(stats.get("estimate"))
        if estimate is not None and run.get("id") is not None:
            out.append((run["id"], estimate, finite(stats.get("ci_low")), finite(stats.get("ci_high"))))
    return out


def measured_at(run: dict) -> dict:
    """What code and device a run measured, compactly: {commit, device}, with `base` (the baseline's commit) for
    a branch lever, whose `commit` is its candidate's, and `dirty` when the working tree had uncommitted changes.
    From the run's kept `on` (the machine's recent runs), else its fingerprint (a journal record); keys it does
    not know are left out, so a run from before commits were kept gives {}."""
    on = run.get("on")
    if isinstance(on, dict):
        return on
    fingerprint = part(run, "fingerprint")
    code, repo = fingerprint.get("code"), fingerprint.get("repo")
    out: dict[str, Any] = {}
    if isinstance(code, dict):  # a branch lever: its two commits, not the working tree
        out["commit"] = part(code, "candidate").get("commit")
        out["base"] = part(code, "baseline").get("commit")
    elif isinstance(repo, dict):
        out["commit"] = repo.get("head")
        if repo.get("diff"):
            out["dirty"] = True
    out["device"] = fingerprint.get("device")
    return {k: v for k, v in out.items() if v}


def threshold(lever) -> float | None:
    """The line a run's CI is judged against: the rule's min_speedup; none for a `choose` experiment (it
    picks among configs) or a lever without a rule. Ratios are stored oriented so that > 1 is better
    whichever way the metric points, so the same line holds for a lower-is-better metric."""
    rule = getattr(lever, "rule", None)
    if rule is None or rule.choose:
        return None
    return float(rule.min_speedup)


def finite(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
