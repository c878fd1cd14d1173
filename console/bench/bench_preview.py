"""Export preview bench: how long after the export's file is written the console shows the doc.

`python -m optseq.console.bench.bench_preview [--rounds N] [--write docs/performance.md]`

In the real console (`make_app` on the default plan, headless under Textual's Pilot at 80×24), on a store
with the Julia gate decided and a lever decided by hand (so the doc has a changed graph, status and results):

- `e`, Enter: from the written file's mtime to the doc on the screen (its intro's line painted, no loading
  cover), with the console's ExportPreview;
- the preview screen alone, pushed over the main screen with the doc already written: ExportPreview (one
  Rich markdown renderable, drawn with the screen) against the MarkdownViewer it replaced (a widget per
  block, rendered in a worker behind a loading cover), alternated round by round in one process.

Medians of `--rounds` rounds, and the ratio of the two screens' medians.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, MarkdownViewer

from optseq.console.tui.app import make_app
from optseq.console.tui.screens.export_preview import ExportPreview
from optseq.state.api import Exit, perf_doc

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
SECTION = "preview"
SEEN = "여러 최적화 lever"
"""The start of the default plan's intro: on the screen once the doc is."""


class ViewerPreview(Screen):
    """The preview as it was before (MarkdownViewer filled by a worker), for the side-by-side figure only."""

    def __init__(self, markdown: str, path: str) -> None:
        super().__init__()
        self.markdown, self.path = markdown, path

    def compose(self):
        yield Label(f"wrote {self.path}  (Escape to go back)", id="export-path", markup=False)
        yield MarkdownViewer(show_table_of_contents=False, id="export-viewer")
        yield Footer()

    def on_mount(self) -> None:
        viewer = self.query_one(MarkdownViewer)
        viewer.set_loading(True)
        self.run_worker(self._show(viewer), name="render-export")

    async def _show(self, viewer: MarkdownViewer) -> None:
        try:
            await viewer.document.update(self.markdown)
        finally:
            viewer.set_loading(False)


def _screen_text(app) -> str:
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def _shown(app, kind: type[Screen]) -> bool:
    screen = app.screen
    return isinstance(screen, kind) and not any(w.loading for w in screen.query("*")) and SEEN in _screen_text(app)


async def _until_shown(pilot, kind: type[Screen]) -> float:
    while not _shown(pilot.app, kind):
        await pilot.pause(0.005)
    return time.time()


def _store(work: Path) -> Path:
    db = work / "state"
    cli = [sys.executable, "-m", "optseq.console.cli", "--plan", str(DEFAULT_PLAN), "--db", str(db)]
    for args in (["record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "0.8x of PyTorch"],
                 ["decide", "amp", "reject", "--why", "no gain at hidden 64"]):
        subprocess.run(cli + args, check=True, capture_output=True, timeout=120)
    return db


async def _write_and_show(db: Path, out: Path) -> float:
    app = make_app(DEFAULT_PLAN, db, export_dir=out.parent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        app.screen.query_one("#path", Input).value = str(out)
        await pilot.press("enter")
        seen = await _until_shown(pilot, ExportPreview)
    return seen - out.stat().st_mtime


async def _screens(db: Path, doc: str, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"ExportPreview": [], "MarkdownViewer": []}
    app = make_app(DEFAULT_PLAN, db, export_dir=db.parent)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(rounds):
            for name, kind in (("ExportPreview", ExportPreview), ("MarkdownViewer", ViewerPreview)):
                start = time.time()
                await app.push_screen(kind(doc, "plan.md"))
                times[name].append(await _until_shown(pilot, kind) - start)
                app.pop_screen()
                await pilot.pause()
    return times


def _machine() -> str:
    cpu = perf_doc.cpu_name()
    from importlib.metadata import version

    return (f"{cpu} ({os.cpu_count()} cores), Python {platform.python_version()}, textual {version('textual')}, "
            f"rich {version('rich')}, {platform.system()} {platform.release()}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.console.bench.bench_preview", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--write", type=Path, default=None, help="put the figures in this markdown file's section")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db = _store(work)
        flow = [asyncio.run(_write_and_show(db, work / f"doc{i}.md")) for i in range(args.rounds)]
        doc = (work / "doc0.md").read_text(encoding="utf-8")
        screens = asyncio.run(_screens(db, doc, args.rounds))
    med = {name: statistics.median(values) for name, values in screens.items()}
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"<!-- section:{SECTION} -->", "## Export preview", "",
        f"Written by `python -m optseq.console.bench.bench_preview --rounds {args.rounds}` on {when}; {_machine()}.", "",
        "The real console headless (Textual Pilot, 80×24) on the default plan, the Julia gate decided and amp "
        f"decided by hand ({len(doc):,}-character doc). Medians of {args.rounds} rounds.", "",
        "| measure | median | rounds |", "|---|---|---|",
        f"| `e`, Enter: file written → doc on screen (ExportPreview) | {statistics.median(flow):.2f} s | "
        + ", ".join(f"{x:.2f}" for x in flow) + " |",
        f"| preview screen pushed → doc on screen: ExportPreview (Rich markdown, drawn with the screen) | "
        f"{med['ExportPreview']:.2f} s | " + ", ".join(f"{x:.2f}" for x in screens["ExportPreview"]) + " |",
        f"| preview screen pushed → doc on screen: MarkdownViewer filled by a worker (before) | "
        f"{med['MarkdownViewer']:.2f} s | " + ", ".join(f"{x:.2f}" for x in screens["MarkdownViewer"]) + " |",
        "", f"MarkdownViewer / ExportPreview, side by side in one process: "
            f"{med['MarkdownViewer'] / med['ExportPreview']:.1f}×.", "", f"<!-- /section:{SECTION} -->",
    ]
    section = "\n".join(lines)
    print(section)
    if args.write is not None:
        perf_doc.write_section(args.write, section, SECTION)
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
