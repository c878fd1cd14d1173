"""A compare as markdown: the verdict, HEAD's speed over BASE's with its interval, both commits, every pair of
launches, and the command that reproduces it. What `optseq compare` appends to `$GITHUB_STEP_SUMMARY` (a CI job's
summary page) and writes to `--summary FILE`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optseq.state.report.escape import cell, code
from optseq.state.text import ratio_text

if TYPE_CHECKING:
    from optseq.state.record_types import Stats
    from optseq.state.runs.compare_run import CompareReport

MARK = {"not slower": "✅", "slower": "❌", "inconclusive": "⚠️", "guard": "❌", "failed": "❌"}
WORDS = {"not slower": "not slower", "slower": "slower", "inconclusive": "inconclusive",
         "guard": "a guard failed", "failed": "the run failed"}


def render(report: CompareReport) -> str:
    """`report` is the compare's, with its `pairs` (pass, pair, base, head, ratio, first)."""
    verdict = report.verdict
    base, head = report.code.get("baseline") or {}, report.code.get("candidate") or {}
    tolerance = report.tolerance
    stats = report.figures.stats
    lines = [f"## optseq compare: {MARK.get(verdict, '')} {WORDS.get(verdict, verdict)}", "",
             f"HEAD {code(head.get('ref', '?'))} ({code(str(head.get('commit', ''))[:7])}) against BASE "
             f"{code(base.get('ref', '?'))} ({code(str(base.get('commit', ''))[:7])}), tolerance "
             f"{_pct(tolerance)}: HEAD is slower when its speed is below "
             f"{_x(1 / (1 + tolerance))} BASE's with 95% confidence, and not slower when above it.", ""]
    if stats is not None and stats.estimate is not None:
        lines += ["| metric | HEAD / BASE speed | 95% interval | pairs | p | BASE median | HEAD median |",
                  "| --- | --- | --- | --- | --- | --- | --- |",
                  "| " + " | ".join(cell(str(c)) for c in (
                      stats.metric, _x(stats.estimate), _interval(stats), stats.n, _p(stats.p_value),
                      _median(stats.baseline), _median(stats.candidate))) + " |", ""]
    lines += [cell(f"{report.message or ''}: {report.reason or ''}"), ""]
    pairs = report.pairs
    if pairs:
        lines += [f"<details><summary>{len(pairs)} pairs of launches (each arm run its own process)</summary>", "",
                  "| pass | pair | first | BASE | HEAD | HEAD / BASE |", "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p['pass']} | {p['pair']} | {p.get('first') or '-'} | {p['base']:.6g} | {p['head']:.6g} | "
                  f"{ratio_text(p['ratio'], 4)} |" for p in pairs]
        lines += ["", "</details>", ""]
    cost = report.cost
    if isinstance(cost.get("wall_s"), (int, float)):
        from optseq.state.runs.run_pass import _length

        lines += [f"Cost: {cost.get('pairs', 0)} pairs of launches, {cost.get('arm_runs', 0)} arm runs (each its own "
                  f"process, warm-ups included), {_length(cost['wall_s'])} of wall time.", ""]
    lines += [f"Reproduce: {code(report.reproduce or '')} (run {report.run_id} in the store)", ""]
    return "\n".join(lines)


def _x(value) -> str:
    return f"{ratio_text(value, 3)}×" if isinstance(value, (int, float)) else "-"


def _pct(value) -> str:
    return f"{value * 100:.4g}%" if isinstance(value, (int, float)) else "-"


def _interval(stats: Stats) -> str:
    low, high = stats.ci_low, stats.ci_high
    return f"[{ratio_text(low, 3)}, {ratio_text(high, 3)}]" if low is not None and high is not None else "-"


def _p(value) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.2g}"


def _median(arm: dict[str, Any] | None) -> str:
    if arm is None or not isinstance(arm.get("median"), (int, float)):
        return "-"
    return f"{arm['median']:.6g} {arm.get('unit') or ''}".rstrip()
