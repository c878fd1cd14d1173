"""The export's charts: per measured lever, its estimate and 95% CI over its runs against the rule's threshold.

The points are the console's history plot's (state.history_points), written as SVG by hand (state/report/
svg_plot.py: no plotting library to import, so an export takes a fraction of a second, from any thread). The
same store gives the same bytes: no date, no ids, text kept as text (a chart is a few KiB).
"""
from __future__ import annotations

import unicodedata
from typing import Iterable, Mapping

from optseq.state.lifecycle.history_points import points, run_stats, threshold
from optseq.state.plan.model import Lever, Plan
from optseq.state.report.svg_plot import Plot, render
from optseq.state.text import ratio_text

MARK = "optseq export chart"
"""Written into every chart's metadata (dc:description): a file without it was not written by optseq, and
the export neither replaces (unforced) nor removes it."""
HEAD_BYTES = 4096
"""How much of a chart's start holds its metadata, and so the mark."""
SUFFIX = ".charts"

CREATOR = "optseq"
"""The metadata's creator, without a version: an upgrade alone does not rewrite every chart's head."""


def folder_name(md_name: str) -> str:
    """The charts' folder beside the markdown file `md_name`: `plan.md` → `plan.charts`.

    One folder per export, named after it: two docs exported into one directory (ko and en, two plans)
    keep their own charts, and what a re-export prunes is only its own. A file named like the folder
    itself (`plan.charts`) gets `plan.charts.charts`, never itself.
    """
    stem = md_name.rsplit(".", 1)[0] if "." in md_name.lstrip(".") else md_name
    name = stem + SUFFIX
    return name if name != md_name else md_name + SUFFIX


def chart_names(plan: Plan, runs: Mapping[str, Iterable[dict]]) -> dict[str, str]:
    """lever id -> its chart's file name, for each lever with at least one point, in plan order.

    Lever ids are letters, digits, `_` and `-`, so `<id>.svg` is a safe name; two ids that a
    case-insensitive (or normalising) file system would take for one get a numbered name after the first.
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    for lever in plan.levers:
        if not points(runs.get(lever.id, ())):
            continue
        name, n = f"{lever.id}.svg", 1
        while _fold(name) in taken:
            n += 1
            name = f"{lever.id}-{n}.svg"
        taken.add(_fold(name))
        names[lever.id] = name
    return names


def paths(folder: str, names: Mapping[str, str]) -> dict[str, str]:
    """lever id -> its chart's path relative to the markdown beside `folder` (what export.render links)."""
    return {lid: f"{folder}/{name}" for lid, name in names.items()}


def render_charts(plan: Plan, runs: Mapping[str, Iterable[dict]], names: Mapping[str, str]) -> dict[str, bytes]:
    """file name -> SVG bytes, for the levers `names` holds."""
    return {name: svg(plan.lever(lid), list(runs.get(lid, ()))) for lid, name in names.items()}


def svg(lever: Lever, runs: list[dict]) -> bytes:
    """One lever's chart: each run's estimate with its CI as an asymmetric error bar, the threshold line."""
    pts = points(runs)
    if not pts:
        raise ValueError(f"{lever.id}: no run with an estimate to chart")
    line = threshold(lever)
    return render(Plot(title=lever.id, xlabel="run", ylabel=_axis_label(lever, runs, pts[-1][0]),
                       ticks=[f"#{p[0]}" for p in pts], estimates=[p[1] for p in pts], lows=[p[2] for p in pts],
                       highs=[p[3] for p in pts], legend="estimate, 95% CI", threshold=line,
                       threshold_label=f"adopt above {ratio_text(line)}×" if line is not None else "",
                       description=MARK, creator=CREATOR))


def is_chart(head: bytes) -> bool:
    """Whether a file's first HEAD_BYTES are a chart optseq wrote."""
    return b"<svg" in head and f"<dc:description>{MARK}</dc:description>".encode() in head


def _axis_label(lever: Lever, runs: list[dict], newest: int) -> str:
    """The ratio the points are: candidate/baseline, or baseline/candidate for a lower-is-better metric (the
    store orients every ratio so that > 1 is better), as the newest plotted run (id `newest`) measured it."""
    stats = next((run_stats(r) for r in runs if r.get("id") == newest), {})
    metric = stats.get("metric") or (lever.rule.metric if lever.rule else "")
    ratio = "baseline / candidate" if stats.get("higher_is_better") is False else "candidate / baseline"
    return f"{metric}: {ratio} (×)" if metric else f"{ratio} (×)"


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()
