"""A compare as markdown: the verdict, HEAD's speed over BASE's with its interval, both commits, every pair of
launches, and the command that reproduces it. What `optseq compare` appends to `$GITHUB_STEP_SUMMARY` (a CI job's
summary page) and writes to `--summary FILE`."""
from __future__ import annotations

from optseq.state.report.escape import cell, code
from optseq.state.text import ratio_text

MARK = {"not slower": "✅", "slower": "❌", "inconclusive": "⚠️", "guard": "❌", "failed": "❌"}
WORDS = {"not slower": "not slower", "slower": "slower", "inconclusive": "inconclusive",
         "guard": "a guard failed", "failed": "the run failed"}


def render(report: dict) -> str:
    """`report` is CompareReport.to_dict() with `pairs` (pass, pair, base, head, ratio, first) added."""
    verdict = report["verdict"]
    base, head = report.get("base") or {}, report.get("head") or {}
    tolerance = report.get("tolerance")
    stats = (report.get("summary") or {}).get("stats") or {}
    lines = [f"## optseq compare: {MARK.get(verdict, '')} {WORDS.get(verdict, verdict)}", "",
             f"HEAD {code(head.get('ref', '?'))} ({code(str(head.get('commit', ''))[:7])}) against BASE "
             f"{code(base.get('ref', '?'))} ({code(str(base.get('commit', ''))[:7])}), tolerance "
             f"{_pct(tolerance)}: HEAD is slower when its speed is below "
             f"{_x(1 / (1 + tolerance)) if isinstance(tolerance, (int, float)) else '-'} BASE's "
             "with 95% confidence, and not slower when above it.", ""]
    if stats.get("estimate") is not None:
        metric = stats.get("metric", "")
        lines += ["| metric | HEAD / BASE speed | 95% interval | pairs | p | BASE median | HEAD median |",
                  "| --- | --- | --- | --- | --- | --- | --- |",
                  "| " + " | ".join(cell(str(c)) for c in (
                      metric, _x(stats["estimate"]), _interval(stats), stats.get("n", ""),
                      _p(stats.get("p_value")), _median(stats.get("baseline")), _median(stats.get("candidate")))) +
                  " |", ""]
    lines += [cell(f"{report.get('message') or ''}: {report.get('reason') or ''}"), ""]
    pairs = report.get("pairs") or []
    if pairs:
        lines += [f"<details><summary>{len(pairs)} pairs of launches (each arm run its own process)</summary>", "",
                  "| pass | pair | first | BASE | HEAD | HEAD / BASE |", "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p['pass']} | {p['pair']} | {p.get('first') or '-'} | {p['base']:.6g} | {p['head']:.6g} | "
                  f"{ratio_text(p['ratio'], 4)} |" for p in pairs]
        lines += ["", "</details>", ""]
    cost = report.get("cost") or {}
    if isinstance(cost.get("wall_s"), (int, float)):
        from optseq.state.runs.run_pass import _length

        lines += [f"Cost: {cost.get('pairs', 0)} pairs of launches, {cost.get('arm_runs', 0)} arm runs (each its own "
                  f"process, warm-ups included), {_length(cost['wall_s'])} of wall time.", ""]
    lines += [f"Reproduce: {code(report.get('reproduce') or '')} (run {report.get('run_id')} in the store)", ""]
    return "\n".join(lines)


def _x(value) -> str:
    return f"{ratio_text(value, 3)}×" if isinstance(value, (int, float)) else "-"


def _pct(value) -> str:
    return f"{value * 100:.4g}%" if isinstance(value, (int, float)) else "-"


def _interval(stats: dict) -> str:
    low, high = stats.get("ci_low"), stats.get("ci_high")
    return f"[{ratio_text(low, 3)}, {ratio_text(high, 3)}]" if isinstance(low, (int, float)) and isinstance(high, (int, float)) else "-"


def _p(value) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.2g}"


def _median(arm) -> str:
    if not isinstance(arm, dict) or not isinstance(arm.get("median"), (int, float)):
        return "-"
    return f"{arm['median']:.6g} {arm.get('unit') or ''}".rstrip()
