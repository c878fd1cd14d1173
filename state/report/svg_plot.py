"""A small SVG plot written by hand: points with asymmetric error bars, a dashed threshold line, a title, axis
labels, a y grid and a legend below the axes (what the export's charts draw, state/report/charts.py).

Written as text, not through a plotting library, because a chart is a few dozen shapes and the library's
import and layout cost an export about a second. Every text stays a `<text>` element whose content is the
label itself (escaped), in a font list that ends in CJK-capable and generic fonts, so plan text in any script
renders and a reader (or a test) finds the words. The same input gives the same bytes: no date, no ids.
"""
from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

WIDTH, HEIGHT = 640, 360
"""The chart's size in px (the 6.4 × 3.6 in figure the charts always had, at 100 px an inch)."""
FONT = 12
FONTS = "DejaVu Sans, Helvetica, Arial, Noto Sans CJK SC, Noto Sans CJK JP, Noto Sans CJK KR, sans-serif"
POINT, BAR, LINE, GRID, INK = "#1c7ed6", "#74c0fc", "#e03131", "#dddddd", "#222222"
CAP = 3
"""Half the width of an error bar's caps, px."""
ROTATE_OVER = 12
"""More points than this and the x tick labels stand on end, as they would otherwise overlap."""


@dataclass(frozen=True)
class Plot:
    title: str
    xlabel: str
    ylabel: str
    ticks: list[str]
    """One x tick label per point, in order."""
    estimates: list[float]
    lows: list[float | None]
    """Each point's lower bound; None draws no lower half of its bar (nor one on the wrong side of the point)."""
    highs: list[float | None]
    legend: str
    threshold: float | None = None
    threshold_label: str = ""
    description: str = ""
    """The metadata's dc:description (what marks a file as written by this program)."""
    creator: str = ""


def render(plot: Plot) -> bytes:
    n = len(plot.estimates)
    if n == 0 or not (len(plot.ticks) == len(plot.lows) == len(plot.highs) == n):
        raise ValueError("a plot needs one tick, estimate, low and high per point, and at least one point")
    lows = [min(e, lo) if lo is not None else e for e, lo in zip(plot.estimates, plot.lows)]
    highs = [max(e, hi) if hi is not None else e for e, hi in zip(plot.estimates, plot.highs)]
    extra = [plot.threshold] if plot.threshold is not None else []
    values = [*plot.estimates, *lows, *highs, *extra]
    y0, y1, yticks = _scale(min(values), max(values))
    labels = [_tick_text(t, yticks) for t in yticks]

    rotated = n > ROTATE_OVER
    tick_room = max(_width(t, FONT - 1) for t in plot.ticks) if rotated else FONT
    left = 8 + FONT + 8 + max(_width(t, FONT - 1) for t in labels) + 6
    top = 8 + FONT + 10
    legend_rows = 1
    bottom = 6 + tick_room + 6 + FONT + 10 + legend_rows * (FONT + 6) + 4
    right = 16
    px0, px1, py0, py1 = left, WIDTH - right, top, HEIGHT - bottom

    def x(i: int) -> float:  # point i (0-based) at i + 1 on an axis from 0.5 to n + 0.5
        return px0 + (i + 0.5) * (px1 - px0) / n

    def y(v: float) -> float:
        return py1 - (v - y0) * (py1 - py0) / (y1 - y0)

    out = [f'<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}px" height="{HEIGHT}px" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" version="1.1">\n', _metadata(plot),
           f'<g font-family="{escape(FONTS)}" font-size="{FONT}" fill="{INK}">\n',
           f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>\n']
    # the y grid and its tick labels
    for value, label in zip(yticks, labels):
        yy = _f(y(value))
        out.append(f'<line x1="{_f(px0)}" y1="{yy}" x2="{_f(px1)}" y2="{yy}" stroke="{GRID}" stroke-width="0.8"/>\n')
        out.append(_text(label, px0 - 6, y(value) + 4, FONT - 1, anchor="end"))
    out.append(f'<rect x="{_f(px0)}" y="{_f(py0)}" width="{_f(px1 - px0)}" height="{_f(py1 - py0)}" fill="none" '
               f'stroke="{INK}" stroke-width="0.8"/>\n')
    # the x ticks and their labels
    for i, tick in enumerate(plot.ticks):
        xx = _f(x(i))
        out.append(f'<line x1="{xx}" y1="{_f(py1)}" x2="{xx}" y2="{_f(py1 + 4)}" stroke="{INK}" stroke-width="0.8"/>\n')
        if rotated:
            out.append(_text(tick, x(i) + 4, py1 + 7, FONT - 1, anchor="end", rotate=True))
        else:
            out.append(_text(tick, x(i), py1 + 6 + FONT, FONT - 1))
    if plot.threshold is not None:
        ty = _f(y(plot.threshold))
        out.append(f'<line x1="{_f(px0)}" y1="{ty}" x2="{_f(px1)}" y2="{ty}" stroke="{LINE}" stroke-width="1" '
                   f'stroke-dasharray="4,3"/>\n')
    # the bars, then the points over them
    for i, (est, low, high) in enumerate(zip(plot.estimates, plot.lows, plot.highs)):
        at = x(i)
        # a bound missing, or one a sequential interval left on the wrong side of the estimate, draws no half-bar
        ends = [v for v in (low if low is not None and low < est else None,
                            high if high is not None and high > est else None) if v is not None]
        if not ends:
            continue
        out.append(f'<path d="M{_f(at)} {_f(y(min(est, *ends)))}V{_f(y(max(est, *ends)))}" stroke="{BAR}" '
                   f'stroke-width="1.5" fill="none"/>\n')
        out.extend(f'<path d="M{_f(at - CAP)} {_f(y(v))}H{_f(at + CAP)}" stroke="{BAR}" stroke-width="1.5"/>\n'
                   for v in ends)
    for i, est in enumerate(plot.estimates):
        out.append(f'<circle cx="{_f(x(i))}" cy="{_f(y(est))}" r="3.5" fill="{POINT}"/>\n')
    # the title, the axis labels, the legend
    out.append(_text(plot.title, (px0 + px1) / 2, 8 + FONT, _fit(plot.title, FONT + 1, WIDTH - 16)))
    out.append(_text(plot.xlabel, (px0 + px1) / 2, py1 + 6 + tick_room + 6 + FONT, FONT))
    out.append(_text(plot.ylabel, 8 + FONT, (py0 + py1) / 2, _fit(plot.ylabel, FONT, HEIGHT - 16), rotate=True))
    out.append(_legend(plot, (px0 + px1) / 2, HEIGHT - 10))
    out.append("</g>\n</svg>\n")
    return "".join(out).encode("utf-8")


def _legend(plot: Plot, cx: float, base: float) -> str:
    entries = [(plot.legend, "point")] + ([(plot.threshold_label, "line")] if plot.threshold is not None else [])
    widths = [22 + _width(label, FONT - 1) for label, _ in entries]
    gap = 24
    x = cx - (sum(widths) + gap * (len(widths) - 1)) / 2
    parts = []
    for (label, kind), w in zip(entries, widths):
        mid = base - 4
        if kind == "point":
            parts.append(f'<path d="M{_f(x + 8)} {_f(mid - 6)}V{_f(mid + 6)}" stroke="{BAR}" stroke-width="1.5"/>'
                         f'<circle cx="{_f(x + 8)}" cy="{_f(mid)}" r="3.5" fill="{POINT}"/>\n')
        else:
            parts.append(f'<path d="M{_f(x)} {_f(mid)}H{_f(x + 16)}" stroke="{LINE}" stroke-width="1" '
                         f'stroke-dasharray="4,3"/>\n')
        parts.append(_text(label, x + 22, base, FONT - 1, anchor="start"))
        x += w + gap
    return "".join(parts)


def _metadata(plot: Plot) -> str:
    return ('<metadata>\n <rdf:RDF xmlns:dc="http://purl.org/dc/elements/1.1/" '
            'xmlns:cc="http://creativecommons.org/ns#" xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            '  <cc:Work>\n   <dc:type rdf:resource="http://purl.org/dc/dcmitype/StillImage"/>\n'
            f'   <dc:description>{escape(plot.description)}</dc:description>\n'
            f'   <dc:creator>\n    <cc:Agent>\n     <dc:title>{escape(plot.creator)}</dc:title>\n    </cc:Agent>\n'
            '   </dc:creator>\n  </cc:Work>\n </rdf:RDF>\n</metadata>\n')


def _text(text: str, x: float, y: float, size: float, *, anchor: str = "middle", rotate: bool = False) -> str:
    turn = f' transform="rotate(-90 {_f(x)} {_f(y)})"' if rotate else ""
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{_f(size)}" text-anchor="{anchor}"{turn}>'
            f'{escape(_clean(text))}</text>\n')


def escape(text: str) -> str:
    """Text safe inside an element or a double-quoted attribute (xml.sax.saxutils would import urllib)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _clean(text: str) -> str:
    """What XML 1.0 can hold: control characters (a tab or newline would only be collapsed) and lone
    surrogates become U+FFFD."""
    return "".join(c if (c >= " " and not 0xD800 <= ord(c) <= 0xDFFF and c not in "\ufffe\uffff") else "\ufffd"
                   for c in str(text))


def _fit(text: str, size: int, room: float) -> float:
    """The font size, at most `size`, at which a long plan text still fits `room` px (down to 7)."""
    width = _width(text, size)
    return size if width <= room else max(7.0, round(size * room / width, 1))


def _width(text: str, size: float) -> float:
    """A label's width, estimated for the layout: a wide (CJK, full-width) character an em, others 0.6 em."""
    return sum(size if unicodedata.east_asian_width(c) in "WF" else 0.6 * size for c in text)


def _scale(low: float, high: float) -> tuple[float, float, list[float]]:
    """The y axis's ends and its ticks: about seven steps of 1, 2, 2.5 or 5 × 10^k over the data, with a
    margin of 5% of its span each side (a flat series gets a span around its value)."""
    if high - low < 1e-12 * max(1.0, abs(high)):
        pad = max(abs(high) * 0.05, 0.05)
        low, high = low - pad, high + pad
    span = high - low
    lo, hi = low - 0.05 * span, high + 0.05 * span
    raw = (hi - lo) / 7
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]
    return lo, hi, ticks


def _tick_text(value: float, ticks: list[float]) -> str:
    """A y tick label with as many decimals as the steps need, at least one (1.0, 1.2, 1.25)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = 1
    while decimals < 6 and abs(round(step, decimals) - step) > 1e-9 * max(1.0, abs(step)):
        decimals += 1
    if abs(value) < step * 1e-6:
        value = 0.0  # never "-0.0"
    return f"{value:.{decimals}f}".replace("-", "\u2212")


def _f(v: float) -> str:
    """A coordinate with two decimals, trailing zeros off: short, and the same on every machine."""
    return f"{v:.2f}".rstrip("0").rstrip(".")
