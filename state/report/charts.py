"""The export's charts: per measured lever, its estimate and 95% CI over its runs against the rule's threshold.

The points are the console's history plot's (state.history_points), drawn with matplotlib's object API
(Figure + the SVG canvas: no pyplot, no global figure manager) so the console can export from any thread.
The same store gives the same bytes: no date, a fixed hash salt for the ids matplotlib makes, text kept as
text (no embedded glyph outlines, which also keeps a chart to a few KiB).
"""
from __future__ import annotations

import io
import threading
import unicodedata
from typing import Iterable, Mapping

from optseq.state.lifecycle.history_points import Point, points, run_stats, threshold
from optseq.state.plan.model import Lever, Plan

MARK = "optseq export chart"
"""Written into every chart's metadata (dc:description): a file without it was not written by optseq, and
the export neither replaces (unforced) nor removes it."""
HEAD_BYTES = 4096
"""How much of a chart's start holds its metadata, and so the mark."""
SUFFIX = ".charts"

RC = {
    "svg.hashsalt": "optseq",  # matplotlib's ids are otherwise random per call: byte-identical re-exports
    "svg.fonttype": "none",  # text as <text>, not embedded outlines
    "font.size": 9.0,
}
_METADATA = {"Date": None, "Creator": "optseq", "Description": MARK}
"""Creator without matplotlib's version, so an upgrade alone does not rewrite every chart's head."""
_RC_LOCK = threading.Lock()
"""rcParams are process-wide: one chart at a time reads them, inside its own rc_context."""


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
    from matplotlib import rc_context, rcdefaults
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    pts = points(runs)
    if not pts:
        raise ValueError(f"{lever.id}: no run with an estimate to chart")
    with _RC_LOCK, rc_context():
        # the defaults, not the user's matplotlibrc: the same store draws the same chart on every machine
        rcdefaults()
        from matplotlib import rcParams

        rcParams.update(RC)
        fig = Figure(figsize=(6.4, 3.6))
        FigureCanvasSVG(fig)
        ax = fig.add_subplot()
        _draw(ax, lever, pts, _axis_label(lever, runs, pts[-1][0]))
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="svg", metadata=_METADATA)
    return out.getvalue()


def is_chart(head: bytes) -> bool:
    """Whether a file's first HEAD_BYTES are a chart optseq wrote."""
    return b"<svg" in head and f"<dc:description>{MARK}</dc:description>".encode() in head


def _draw(ax, lever: Lever, pts: list[Point], ylabel: str) -> None:
    xs = list(range(1, len(pts) + 1))
    estimates = [p[1] for p in pts]
    # a bound missing, or one a sequential interval left on the wrong side of the median, draws no bar
    below = [max(0.0, est - low) if low is not None else 0.0 for _, est, low, _ in pts]
    above = [max(0.0, high - est) if high is not None else 0.0 for _, est, _, high in pts]
    ax.errorbar(xs, estimates, yerr=[below, above], fmt="o", color="#1c7ed6", ecolor="#74c0fc", capsize=3,
                label="estimate, 95% CI")
    line = threshold(lever)
    if line is not None:
        ax.axhline(line, color="#e03131", linestyle="--", linewidth=1, label=f"adopt above {line:.2f}×")
    ax.set_xticks(xs, [f"#{p[0]}" for p in pts], rotation=90 if len(pts) > 12 else 0)
    ax.set_xlim(0.5, len(pts) + 0.5)
    ax.set_xlabel("run")
    ax.set_ylabel(ylabel)
    ax.set_title(lever.id)
    ax.grid(axis="y", alpha=0.3)
    # below the axes, not inside: a legend placed "best" still covers points once the runs fill the width
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2 if len(pts) <= 12 else -0.3), ncol=2, frameon=False,
              fontsize="small")


def _axis_label(lever: Lever, runs: list[dict], newest: int) -> str:
    """The ratio the points are: candidate/baseline, or baseline/candidate for a lower-is-better metric (the
    store orients every ratio so that > 1 is better), as the newest plotted run (id `newest`) measured it."""
    stats = next((run_stats(r) for r in runs if r.get("id") == newest), {})
    metric = stats.get("metric") or (lever.rule.metric if lever.rule else "")
    ratio = "baseline / candidate" if stats.get("higher_is_better") is False else "candidate / baseline"
    text = f"{metric}: {ratio} (×)" if metric else f"{ratio} (×)"
    # plan text, not matplotlib markup: a pair of `$` would otherwise be parsed as mathtext (or fail to)
    return text.replace("$", r"\$")


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()
