"""The Run tab's newest compares (`optseq compare BASE HEAD`, runs of no lever): which commits, the verdict, the
ratio, the tolerance and when, one line each, following other shells as the lever runs do."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget

from optseq.console.words.figures import estimate_text, when_text
from optseq.console.words.writers import writer_cell, writer_of
from optseq.state.api import testbed_label as label

if TYPE_CHECKING:
    from optseq.state.api import KeptCompare

SHOWN = 3
"""Compares listed, newest first: the Run tab at 80×24 under a plan of nine levers has ten lines for everything;
`optseq runs` lists them all."""
REF_CHARS = 14
"""A ref is cut past this (`feature/faster…`): the commit beside it says which it was."""


class CompareList(Widget):
    """Hidden (class -none) until the store holds a compare. Drawn at its width: the parts that do not fit are
    left out whole, the time first, then the tolerance, before a line is cut."""

    DEFAULT_CSS = """
    CompareList {
        height: auto;
        max-height: 4;
        border-top: solid $panel;
        border-title-color: $text-muted;
        border-title-align: left;
    }
    CompareList.-none {
        display: none;
    }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "compares (optseq runs lists them all)"
        self.compares: list[KeptCompare] = []
        """Newest first, at most SHOWN."""
        self.add_class("-none", update=False)  # styled as it is registered: hidden before any compare

    testbeds = False
    """Whether each line names its testbed: the store holds runs of more than one."""

    def show(self, compares: list[KeptCompare], testbeds: bool = False) -> None:
        newest = sorted(compares, key=lambda c: c.id or 0, reverse=True)[:SHOWN]
        if newest == self.compares and testbeds == self.testbeds:
            return
        self.compares, self.testbeds = newest, testbeds
        self.set_class(not newest, "-none")
        self.refresh(layout=True)

    def lines(self, width: int | None = None) -> list[str]:
        """What each line says at `width` columns (whole when None): tests read the list through this."""
        # as `optseq runs`: once a compare came from another writer (optseq sync), each line names its writer
        writers = any(writer_of(c.stored) for c in self.compares)
        return [fit(compare_parts(c, writers, self.testbeds), width) for c in self.compares]

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.compares)

    def render(self) -> Text:
        return Text("\n".join(self.lines(self.content_size.width or None)), no_wrap=True, overflow="ellipsis")


def compare_parts(kept: KeptCompare, writers: bool = False, testbeds: bool = False) -> list[str]:
    """[`compare 5`, `fast 41b7152 vs main 974f1b9`, `not slower 1.01× [0.97,1.05]`, `tol 3%`,
    `2026-12-04 17:13`]; a part with nothing to say is ''. With `writers`, the first says whose it is
    (`compare 5 (ci-3f2a run 4)`, `compare 6 (this store)`); with `testbeds`, the verdict where it was measured
    (`… on gpu-box`). The run index's copy, typed as it kept it; its writer and testbed read from it as stored
    (the words `optseq runs` says them with)."""
    run, record = kept.run, kept.stored
    about = run.compare or {}
    head, base = about.get("head") or {}, about.get("base") or {}
    status = str(run.status or "")
    if status == "succeeded":
        figure = estimate_text(run.stats, wide=True)
        outcome = f"{run.verdict or 'done'}" + (f" {figure}" if figure != "-" else "")
    elif status in ("running", "queued"):
        outcome = status
    else:
        outcome = status or "-"  # failed, timeout, cancelled, interrupted: `optseq runs` has its reason
    tolerance = about.get("tolerance")
    if testbeds:
        outcome += f" on {label(record)}"
    return [f"compare {run.id}" + (f" ({writer_cell(record)})" if writers else ""),
            f"{_side(head)} vs {_side(base)}", outcome,
            f"tol {tolerance * 100:.4g}%" if isinstance(tolerance, (int, float)) else "", when_text(run)]


def _side(side: dict) -> str:
    ref = str(side.get("ref") or "?")
    if len(ref) > REF_CHARS:
        ref = ref[:REF_CHARS - 1] + "…"
    commit = str(side.get("commit") or "")[:7]
    return f"{ref} {commit}".strip()


DROPPED_FIRST = (4, 3)
"""The parts left out whole when a line is too long: when, then the tolerance."""


def fit(parts: list[str], width: int | None) -> str:
    kept = list(parts)
    line = "  ".join(p for p in kept if p)
    for index in DROPPED_FIRST:
        if width is None or len(line) <= width:
            break
        kept[index] = ""
        line = "  ".join(p for p in kept if p)
    return line
