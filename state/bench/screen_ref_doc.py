"""The `screen-ref` section of docs/performance.md: what `screen_ref`'s screens measured, as tables and sentences."""
from __future__ import annotations

import datetime as dt

from optseq.state.bench.store_doc import machine
from optseq.state.screen_record import Effect, Report
from optseq.state.text import ratio_text

SECTION = "screen-ref"


def _interval(effect: Effect) -> str:
    # a fit's effect has both bounds; "?" where a record had none
    low, high = (ratio_text(x) if x is not None else "?" for x in (effect.low, effect.high))
    return f"{ratio_text(effect.ratio)}× [{low}, {high}]"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def screen_lines(found, title: str) -> list[str]:
    """One screen: its design and spending, each lever's effect and call, its interactions, its confirmation."""
    report: Report | None = found.report
    lines = [f"### {title}", ""]
    if report is None:
        return lines + [f"Not measured: `optseq --run screen` exited {found.exit_code} ({found.error}).", ""]
    fit = report.fit
    blocks = report.blocks
    lines += [f"{report.design}. {len(blocks)} block{'s' * (len(blocks) != 1)} run, "
              f"{report.launches} launches of the design, {_minutes(found.wall_s)} in all"
              + (" (the confirmation's paired run included)" if report.confirmed is not None else "") + "; the run "
              f"ended {report.status}" + (f" ({report.message})" if report.status != "succeeded" else "")
              + (f"; residual sd {fit.sigma:.3f} on the log metric, {fit.downweighted or 0} launches "
                 "down-weighted as stalls" if fit is not None else "") + ".", ""]
    mains = {e.name: e for e in fit.mains} if fit is not None else {}
    lines += ["| lever | effect [95% interval] | call | why |", "|---|---|---|---|"]
    for lever in found.levers:
        call = report.calls.get(lever)
        decided = report.decisions.get(lever) or (call.outcome if call is not None else "undecided")
        measured = _interval(mains[lever]) if lever in mains else "not measured"
        lines.append(f"| {lever} | {measured} | {decided} | {call.reason if call is not None else ''} |")
    interactions = fit.interactions if fit is not None else []
    if interactions:
        lines += ["", "| interaction | ratio of ratios [95% interval] | aliased with |", "|---|---|---|"]
        for effect in interactions:
            lines.append(f"| {effect.name} | {_interval(effect)} | {', '.join(effect.aliases or ()) or '—'} |")
    said = report.said
    lines += ["", ("Interactions found: " + " ".join(s if s.endswith(".") else s + "." for s in said)) if said
              else "No interaction found significant."]
    confirmed = report.confirmed
    if confirmed is not None:
        lines.append(f"Confirmed {' + '.join(confirmed.levers)} against the stack by the paired test (run "
                     f"{confirmed.run}): {confirmed.outcome}"
                     + (f" ({confirmed.reason})" if confirmed.reason else "") + ".")
    return lines + [""]


def size_lines(ratios, sizes: tuple[int, int]) -> list[str]:
    small, large = sizes
    lines = [f"### Each lever's effect at h{small} and h{large}", ""]
    if not ratios:
        return lines + ["Not measured: one of the two screens brought no fit.", ""]
    lines += [f"| lever | at h{small} | at h{large} | h{large} / h{small} [95% interval] | df |",
              "|---|---|---|---|---|"]
    for r in ratios:
        lines.append(f"| {r.lever} | {ratio_text(r.small)}× | {ratio_text(r.large)}× | {ratio_text(r.ratio)}× "
                     f"[{ratio_text(r.low)}, {ratio_text(r.high)}] | {r.df:.0f} |")
    lines.append("")
    for r in ratios:
        if r.low > 1.0 or r.high < 1.0:
            lines.append(f"Measured: {r.lever}'s gain depends on model size: {ratio_text(r.small)}× at h{small}, "
                         f"{ratio_text(r.large)}× at h{large} ({ratio_text(r.ratio)}× [{ratio_text(r.low)}, "
                         f"{ratio_text(r.high)}]).")
        else:
            lines.append(f"{r.lever}: no dependence on model size shown between h{small} and h{large} (the interval "
                         f"[{ratio_text(r.low)}, {ratio_text(r.high)}] holds 1).")
    return lines + [""]


def render(screens, ratios, *, sizes: tuple[int, int], command: str, make: str, when: dt.datetime,
           load_start: str, load_end: str) -> str:
    made_by = f"`make screen-bench` (`{command}`)" if command == make else f"`{command}`"
    small, large = sizes
    lines = [
        f"<!-- section:{SECTION} -->", "## Screens on the reference workload (issue 40, point 5)", "",
        f"Written by {made_by} on {when:%Y-%m-%d %H:%M} UTC; {machine()}. Load average at the start "
        f"{load_start}; at the end {load_end}. The machine is shared: other work ran beside every launch, and its "
        "wall-time noise is in these intervals.", "",
        "Each screen is `optseq --run screen LEVER … --json` in a fresh store, every design run a launch of the "
        "workload with that subset of the levers' changes, in seeded random blocks until each lever is decided or "
        "the budget is spent. The engine's levers are those of configs/examples/screen_engine/plan.toml, each a "
        "flag of one timed Deep CFR iteration on Leduc (`python -m optseq.engine.bench iteration`: traversal, "
        "sequential or through Option A's server, then the advantage net's training steps; the metric iter/s, "
        "1 / the median of 3 timed iterations after an untimed one, one torch thread). Model size is the context "
        f"of two independent screens (--hidden={small} and --hidden={large}), not a factor of one: a factor is a "
        "lever the run decides and may adopt. A lever's dependence on size is the ratio of its two effects, its "
        "interval from the two log-scale standard errors combined (Welch–Satterthwaite df). An effect is the "
        "lever's speed ratio averaged over the other levers' levels (> 1 faster); an interaction a×b is a's "
        "ratio with b on over a's ratio with b off. Calls are the screen's own (each lever's `min_speedup`, "
        "sequential bounds); the intervals shown are the fit's plain 95% ones.", ""]
    for found in screens:
        if found.name == "cpu_train":
            title = "configs/examples/cpu_train: its four toggles as one workload"
        else:
            title = f"Engine levers at {found.name} (`--hidden={found.name[1:]}`)"
        lines += screen_lines(found, title)
    lines += size_lines(ratios, sizes)
    if any(found.name == "cpu_train" for found in screens):
        lines += ["cpu_train's plan is written by the command as one `[workload]` (train.py, cwd "
                  "configs/examples/cpu_train) with its four levers' environment toggles and rules, without the "
                  "`requires` order (they are decided together), and one guard: the final loss within 3% of the "
                  "run with no toggle (the loosest of its levers' own guards, since a design run mixes them).", ""]
    lines.append(f"<!-- /section:{SECTION} -->")
    return "\n".join(lines)
