"""The hand-written SVG plot behind the export's charts: well-formed whatever the plan's text, every label a
<text> of its own words, the points, bars and threshold where their values put them, the same bytes each time."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from optseq.state.report.svg_plot import HEIGHT, WIDTH, Plot, render

NS = "{http://www.w3.org/2000/svg}"


def plot(**kw) -> Plot:
    base = dict(title="amp", xlabel="run", ylabel="items_per_s: candidate / baseline (×)", ticks=["#1", "#2", "#3"],
                estimates=[1.1, 1.4, 1.25], lows=[1.0, 1.3, None], highs=[1.2, 1.5, 1.3], legend="estimate, 95% CI",
                threshold=1.2, threshold_label="adopt above 1.20×", description="optseq export chart",
                creator="optseq")
    return Plot(**{**base, **kw})


def parse(svg: bytes) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{NS}svg"
    return root


def words(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{NS}text") if t.text]


def segments(root: ET.Element, colour: str, kind: str) -> list[tuple[float, ...]]:
    """The paths of one colour drawn vertically (kind "V": (x, y_from, y_to)) or horizontally ("H": (x_from, y,
    x_to))."""
    return [tuple(float(v) for v in re.findall(r"-?[0-9.]+", p.get("d")))
            for p in root.iter(f"{NS}path") if p.get("stroke") == colour and kind in p.get("d")]


def test_plan_text_of_any_script_is_escaped_and_kept_as_its_own_words():
    label = 'ステップ時間 <b>&amp; "단위" $x$\x07'
    root = parse(render(plot(ylabel=label, title="a&b<c>")))
    got = words(root)
    assert 'ステップ時間 <b>&amp; "단위" $x$\ufffd' in got  # the control character alone is replaced
    assert "a&b<c>" in got and "#1" in got and "adopt above 1.20×" in got and "estimate, 95% CI" in got
    assert "<b>" not in render(plot(ylabel=label)).decode("utf-8")  # no markup of the plan's reaches the file
    fonts = next(root.iter(f"{NS}g")).get("font-family")
    assert "CJK" in fonts and fonts.endswith("sans-serif")


def test_points_bars_and_the_threshold_sit_where_their_values_put_them():
    root = parse(render(plot()))
    circles = [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{NS}circle")][:3]  # then the legend's
    xs, ys = [c[0] for c in circles], [c[1] for c in circles]
    assert xs == sorted(xs) and len(set(xs)) == 3  # in run order, left to right
    assert ys[1] < ys[2] < ys[0]  # 1.4 highest on the page, then 1.25, then 1.1 (y grows downwards)
    [threshold] = [ln for ln in root.iter(f"{NS}line") if ln.get("stroke-dasharray")]
    assert ys[1] < float(threshold.get("y1")) < ys[0]  # 1.2 between 1.4 and 1.1
    assert all(0 < x < WIDTH for x in xs) and all(0 < y < HEIGHT for y in ys)

    bars = [b for b in segments(root, "#74c0fc", "V") if b[0] in xs]
    assert [b[0] for b in bars] == xs  # one bar per point (the legend's sample bar is elsewhere)
    for (x, y), bar in zip(circles, bars):
        assert min(bar[1], bar[2]) <= y <= max(bar[1], bar[2])
    assert bars[2][1] == ys[2]  # no lower bound: the bar starts at the point itself
    caps = segments(root, "#74c0fc", "H")
    assert len(caps) == 5  # two for each whole bar, one for the half bar
    assert all(any(abs((c[0] + c[2]) / 2 - x) < 0.02 for x in xs) for c in caps)


def test_a_bound_on_the_wrong_side_or_missing_draws_no_bar_and_no_line_without_a_threshold():
    root = parse(render(plot(ticks=["#4"], estimates=[1.3], lows=[1.35], highs=[None], threshold=None)))
    assert segments(root, "#74c0fc", "H") == [] and len(segments(root, "#74c0fc", "V")) == 1  # the legend's alone
    assert not [ln for ln in root.iter(f"{NS}line") if ln.get("stroke-dasharray")]
    assert "adopt above 1.20×" not in words(root)


def test_many_runs_stand_their_labels_on_end_and_the_bytes_are_the_same_each_time():
    n = 30
    many = plot(ticks=[f"#{i}" for i in range(n)], estimates=[1 + i / 100 for i in range(n)], lows=[None] * n,
                highs=[None] * n)
    svg = render(many)
    assert render(many) == svg
    root = parse(svg)
    ticks = [t for t in root.iter(f"{NS}text") if (t.text or "").startswith("#")]
    assert len(ticks) == n and all("rotate(-90" in (t.get("transform") or "") for t in ticks)
    few = [t for t in parse(render(plot())).iter(f"{NS}text") if (t.text or "").startswith("#")]
    assert few and not any(t.get("transform") for t in few)


def test_the_y_ticks_cover_the_data_with_labels_that_tell_them_apart():
    root = parse(render(plot(estimates=[1.001, 1.004, 1.002], lows=[None] * 3, highs=[None] * 3, threshold=None)))
    values = [t.text for t in root.iter(f"{NS}text") if t.get("text-anchor") == "end" and not t.get("transform")]
    assert len(values) >= 3 and len(set(values)) == len(values)  # fine steps still read as different numbers
    numbers = [float(v.replace("\u2212", "-")) for v in values]
    assert numbers == sorted(numbers) and numbers[0] <= 1.001 and numbers[-1] >= 1.004 - (numbers[1] - numbers[0])


def test_a_plot_without_points_is_refused():
    with pytest.raises(ValueError, match="at least one point"):
        render(plot(ticks=[], estimates=[], lows=[], highs=[]))
