"""The export's charts: one SVG per measured lever beside the doc, linked from its results, the same points as
the console's history plot, byte-identical for the same store, and only optseq's own charts ever removed."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest

from optseq.state.report import charts as export_charts
from optseq.state.report.target import NotAChart, export_doc, write_export
from optseq.state.lifecycle.history_points import MAX_RUNS, points
from optseq.state.plan.loader import load
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ

TINY = Path(__file__).resolve().parents[2] / "console" / "tiny_lever.py"
SVG = "{http://www.w3.org/2000/svg}"
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]*)\)")


def plan(tmp_path: Path) -> Path:
    """amp clears its 1.20× threshold, compile falls short of it, idle is never run."""
    levers = "".join(f"""
[[levers]]
id = "{name}"
title = "{name}"
kind = "speedup"
plan_doc = "docs/{name}.md"
run = {json.dumps([sys.executable, str(TINY), "--ratio", ratio, "--log-lines", "0"])}
timeout_s = 300
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 6 }}
""" for name, ratio in (("amp", "1.5"), ("compile", "1.1"), ("idle", "1.5")))
    path = tmp_path / "plan.toml"
    path.write_text(f'[plan]\ntitle = "Charts"\nas_of = 2026-12-01\nlang = "en"\n{levers}', encoding="utf-8")
    return path


def measured(tmp_path: Path, levers=("amp", "compile")) -> tuple[Path, Path]:
    path, db = plan(tmp_path), tmp_path / "db"
    with Sequencer.open(path, db) as seq:
        for lever in levers:
            assert seq.run_lever(lever).status == "succeeded"
    return path, db


def export(path: Path, db: Path, target: Path, **kw) -> str:
    with Sequencer.open(path, db, mode="read") as seq:
        written, text = export_doc(seq, target, "en", **kw)
    assert written == target and target.read_text(encoding="utf-8") == text
    return text


def texts(svg: bytes) -> list[str]:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    return [t.text for t in root.iter(f"{SVG}text") if t.text]


def charts(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_one_chart_per_measured_lever_linked_from_the_results(tmp_path):
    path, db = measured(tmp_path)
    out = tmp_path / "docs"
    out.mkdir()
    target = out / "plan.md"
    text = export(path, db, target)

    folder = out / "plan.charts"
    assert sorted(p.name for p in out.iterdir()) == ["plan.charts", "plan.md"]
    assert sorted(charts(folder)) == ["amp.svg", "compile.svg"]  # none for idle: it has no run
    for lever, run_id in (("amp", 1), ("compile", 2)):
        svg = (folder / f"{lever}.svg").read_bytes()
        words = texts(svg)
        assert lever in words and f"#{run_id}" in words
        assert "adopt above 1.20×" in words and "estimate, 95% CI" in words
        assert "items_per_s: candidate / baseline (×)" in words
        assert b"DejaVuSans-" not in svg  # glyphs not embedded: text stays text
        assert export_charts.is_chart(svg[:export_charts.HEAD_BYTES])

    # the results section links exactly those files, relative to the doc, in plan order
    results = text[text.index("## Results"):]
    links = IMAGE.findall(results)
    assert [link for _, link in links] == ["plan.charts/amp.svg", "plan.charts/compile.svg"]
    assert [alt for alt, _ in links] == ["amp: estimate and 95% CI per run", "compile: estimate and 95% CI per run"]
    assert IMAGE.findall(text[:text.index("## Results")]) == []
    for _, link in links:
        assert not Path(link).is_absolute() and (target.parent / unquote(link)).resolve().is_file()


def test_the_same_store_gives_the_same_bytes_and_a_new_run_updates_its_chart(tmp_path, cli_env):
    path, db = measured(tmp_path)
    target = tmp_path / "plan.md"
    export(path, db, target)
    first = {**charts(tmp_path / "plan.charts"), "plan.md": target.read_bytes()}

    # another process, the CLI: nothing in a chart (no date, no id) may differ per process
    env = {**cli_env, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(db)}
    proc = subprocess.run([*OPTSEQ, "export", "--lang", "en", "-o", str(target)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == f"wrote {target}\n", proc.stderr
    assert {**charts(tmp_path / "plan.charts"), "plan.md": target.read_bytes()} == first

    with Sequencer.open(path, db) as seq:
        assert seq.run_lever("amp").run_id == 3
    export(path, db, target)
    after = charts(tmp_path / "plan.charts")
    assert after["compile.svg"] == first["compile.svg"]  # untouched lever, same bytes
    assert after["amp.svg"] != first["amp.svg"]
    assert [w for w in texts(after["amp.svg"]) if w.startswith("#")] == ["#1", "#3"]
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_a_doc_without_a_file_links_no_charts(tmp_path, cli_env):
    path, db = measured(tmp_path)
    with Sequencer.open(path, db, mode="read") as seq:
        assert IMAGE.findall(seq.views.export("en")) == []  # the console's preview of a doc written nowhere
    env = {**cli_env, "OPTSEQ_PLAN": str(path), "OPTSEQ_DB": str(db)}
    proc = subprocess.run([*OPTSEQ, "export", "--lang", "en"], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0 and "## Results" in proc.stdout and IMAGE.findall(proc.stdout) == []
    assert not list(tmp_path.glob("*.charts"))


def test_a_store_with_nothing_measured_writes_no_folder(tmp_path):
    path, db = measured(tmp_path, levers=())
    text = export(path, db, tmp_path / "plan.md")
    assert IMAGE.findall(text) == [] and not (tmp_path / "plan.charts").exists()


def test_a_name_that_needs_encoding_links_a_file_that_resolves(tmp_path):
    path, db = measured(tmp_path, levers=("amp",))
    target = tmp_path / "my plan (draft).md"
    text = export(path, db, target)
    [(_, link)] = IMAGE.findall(text)
    assert " " not in link and "(" not in link  # would end the link early
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(text)
    assert re.findall(r'<img src="([^"]*)"', html) == [link]  # a renderer reads it as the one image it is
    assert (tmp_path / unquote(link)).resolve() == (tmp_path / "my plan (draft).charts" / "amp.svg").resolve()
    assert (tmp_path / unquote(link)).is_file()


@pytest.mark.parametrize("name, folder", [("plan.md", "plan.charts"), ("plan", "plan.charts"),
                                          ("a.b.md", "a.b.charts"), (".hidden", ".hidden.charts"),
                                          ("plan.charts", "plan.charts.charts")])
def test_the_folder_is_named_after_the_doc_never_the_doc_itself(name, folder):
    assert export_charts.folder_name(name) == folder


# -- what an export may replace and remove in the charts' folder ----------------------------------------------
def chart(tmp_path: Path, lever: str = "amp") -> bytes:
    runs = [{"id": 7, "summary": {"stats": {"estimate": 1.4, "ci_low": 1.3, "ci_high": 1.5}}}]
    return export_charts.svg(load(plan(tmp_path)).lever(lever), runs)


def test_charts_of_levers_no_longer_measured_go_and_the_users_files_stay(tmp_path):
    svg = chart(tmp_path)
    target = tmp_path / "plan.md"
    folder = tmp_path / "plan.charts"
    write_export(target, "doc\n<!-- optseq export -->\n", charts={"amp.svg": svg, "compile.svg": svg})
    (folder / "notes.svg").write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"/>')  # the user's drawing
    (folder / "README.txt").write_text("mine", encoding="utf-8")
    write_export(target, "doc\n<!-- optseq export -->\n", charts={"amp.svg": svg})
    assert sorted(charts(folder)) == ["README.txt", "amp.svg", "notes.svg"]

    # nothing measured any more: optseq's charts go; the folder stays while the user's files are in it
    write_export(target, "doc\n<!-- optseq export -->\n", charts={})
    assert sorted(charts(folder)) == ["README.txt", "notes.svg"]
    (folder / "README.txt").unlink()
    (folder / "notes.svg").unlink()
    write_export(target, "doc\n<!-- optseq export -->\n", charts={"amp.svg": svg})
    write_export(target, "doc\n<!-- optseq export -->\n", charts={})
    assert not folder.exists()  # it held only optseq's charts


def test_a_file_named_like_a_chart_that_optseq_did_not_write_is_kept_unless_forced(tmp_path):
    svg = chart(tmp_path)
    target = tmp_path / "plan.md"
    folder = tmp_path / "plan.charts"
    folder.mkdir()
    mine = b'<svg xmlns="http://www.w3.org/2000/svg"><text>mine</text></svg>'
    (folder / "amp.svg").write_bytes(mine)
    with pytest.raises(NotAChart, match="is not a chart optseq wrote"):
        write_export(target, "doc\n<!-- optseq export -->\n", charts={"amp.svg": svg})
    assert not target.exists() and (folder / "amp.svg").read_bytes() == mine  # refused before anything was written
    write_export(target, "doc\n<!-- optseq export -->\n", charts={"amp.svg": svg}, force=True)
    assert (folder / "amp.svg").read_bytes() == svg


def test_a_file_where_the_folder_goes_is_refused(tmp_path):
    svg = chart(tmp_path)
    (tmp_path / "plan.charts").write_text("a file", encoding="utf-8")
    with pytest.raises(ValueError, match="is where the export's charts go, and is not a directory"):
        write_export(tmp_path / "plan.md", "doc\n", charts={"amp.svg": svg})
    assert not (tmp_path / "plan.md").exists()


# -- the chart itself -----------------------------------------------------------------------------------------
def test_a_lower_is_better_metric_is_labelled_by_its_inverted_ratio_and_missing_bounds_draw_no_bar(tmp_path):
    lever = load(plan(tmp_path)).lever("amp")
    runs = [{"id": 4, "summary": {"stats": {"estimate": 1.3, "ci_low": 1.2, "ci_high": 1.45,
                                             "metric": "step_s", "higher_is_better": False}}},
            {"id": 9, "summary": {"stats": {"estimate": 1.25, "metric": "step_s", "higher_is_better": False}}},
            {"id": 11, "status": "failed"}]
    words = texts(export_charts.svg(lever, runs))
    assert "step_s: baseline / candidate (×)" in words
    assert [w for w in words if w.startswith("#")] == ["#4", "#9"]  # no point for a run without an estimate


def test_the_window_is_the_history_plots(tmp_path):
    runs = [{"id": i, "summary": {"stats": {"estimate": 1.0 + i / 100}}} for i in range(1, MAX_RUNS + 6)]
    runs.append({"id": 99, "summary": {"stats": {"estimate": float("nan")}}})
    got = points(runs)
    assert [p[0] for p in got] == list(range(7, MAX_RUNS + 6))  # newest MAX_RUNS runs, the NaN one among them


# -- the console's export writes the charts too --------------------------------------------------------------
def test_the_console_export_writes_the_charts_its_history_plot_shows(tmp_path):
    from optseq.console.tui.app import make_app
    from optseq.console.tui.widgets.history_plot import HistoryPlot
    from tests.console.test_app import until

    path, db = measured(tmp_path)
    target = tmp_path / "plan.md"
    shown = {}

    async def go():
        app = make_app(path, db)
        async with app.run_test(size=(100, 30)) as pilot:
            # the views behind tabs mount a frame after the first paint
            await until(pilot, lambda: app.main.query("#history-view"), what="the history view")
            for lever in ("amp", "compile"):
                app.main.show_lever(lever)
                shown[lever] = list(app.main.query_one("#history-view", HistoryPlot).points)  # the narrow layout's plot
            await pilot.press("e")
            app.screen.query_one("#path").value = str(target)
            app.screen.query_one("#lang").value = "en"
            await pilot.press("enter")  # the dialog writes in a worker: wait for the preview it opens after
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")

    asyncio.run(go())
    text = target.read_text(encoding="utf-8")
    assert [link for _, link in IMAGE.findall(text)] == ["plan.charts/amp.svg", "plan.charts/compile.svg"]
    for lever, pts in shown.items():
        assert pts  # the plot has points to compare
        words = texts((tmp_path / "plan.charts" / f"{lever}.svg").read_bytes())
        assert [w for w in words if w.startswith("#")] == [f"#{p[0]}" for p in pts]
