"""The dependency graph as a tree: each lever once, under the first lever its gates wait on, with its mark and figure."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree

from optseq.console.words.branch_words import code_note
from optseq.console.words.figures import last_estimate, mark_of, state_text
from optseq.state.api import gate_atoms as atoms

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus, Run

MARK_STYLE = {"ready": "bold green", "running": "bold green", "measured": "yellow", "blocked": "dim",
              "decided": "cyan", "unmerged": "yellow", "eroded": "bold red", "stale": "bold yellow",
              "closed": "dim strike"}
LEGEND = "ready: can run · measured: no decision yet · blocked: a gate unmet · stale: re-measure"
"""The graph's top line, short enough for 80 columns; decided, running and closed say themselves, and unmerged
(an adopted branch not merged yet) is in the help, and its line says what to do (`· merge fast (bf379ab)`)."""


class DependencyGraph(Tree[str]):
    """Roots are levers with no lever gate; a lever gated on several levers sits under the first, naming the rest."""

    @dataclass
    class Chosen(Message):
        """Enter on a node: make that lever the selected one."""

        lever: str

    DEFAULT_CSS = """
    DependencyGraph {
        border-top: solid $panel;
        border-title-color: $text-muted;
        border-title-align: left;
    }
    """
    """The legend sits in the top border: always in sight, and never a line the cursor can land on."""

    def __init__(self, **kwargs) -> None:
        super().__init__("plan", **kwargs)
        self.show_root = False
        self.border_title = LEGEND
        self.marks: dict[str, str] = {}
        """lever id -> its mark as last drawn (ready, running, measured, blocked, decided, stale, closed)."""

    def show(self, plan, views: list[LeverStatus], running: Collection[str] = (), runs: Sequence[Run] = ()) -> None:
        by_id = {v.id: v for v in views}
        parents: dict[str, list[tuple[str, str | None]]] = {}
        facts: dict[str, list[str]] = {}
        either = {l.id for l in plan.levers if getattr(l.requires, "op", "all") == "any"}
        for lever in plan.levers:
            for atom in atoms(lever.requires):
                if atom.fact:
                    facts.setdefault(lever.id, []).append(atom.fact)
                elif atom.lever is not None and atom.lever in by_id and atom.lever not in [
                        p for p, _ in parents.get(lever.id, [])]:
                    parents.setdefault(lever.id, []).append((atom.lever, atom.outcome))
        # one place per lever, so a lever reachable by two edges is not listed twice: under its first gate's
        # lever; the other gates' levers are named on its line
        children: dict[str, list[tuple[str, str | None]]] = {}
        for child, edges in parents.items():
            parent, outcome = edges[0]
            children.setdefault(parent, []).append((child, outcome))
        self.marks = {v.id: ("running" if v.id in running else mark_of(v)) for v in views}
        line = self.cursor_line
        self.clear()
        placed: set[str] = set()

        def add(node, lever_id: str, via: str | None) -> None:
            if lever_id in placed:  # a cycle the plan's validation let through: never loop
                return
            placed.add(lever_id)
            also = [p for p, _ in parents.get(lever_id, [])[1:]]
            lever_runs = [r for r in runs if r.lever == lever_id]  # the views' latest_runs, typed
            label = self._label(by_id[lever_id], via, facts.get(lever_id, []), running, also, lever_runs,
                                "or" if lever_id in either else "also")
            kids = children.get(lever_id, [])
            branch = node.add(label, data=lever_id, expand=True, allow_expand=bool(kids))
            for child, outcome in kids:
                add(branch, child, outcome)

        for lever in plan.levers:
            if lever.id not in parents and lever.id in by_id:
                add(self.root, lever.id, None)
        for lever in plan.levers:  # a lever whose gates form a loop with no root still gets its line
            if lever.id in by_id and lever.id not in placed:
                add(self.root, lever.id, None)
        self.cursor_line = max(0, line)

    def _label(self, view: LeverStatus, via: str | None, facts: list[str], running: Collection[str] = (),
               also: Sequence[str] = (), runs: Sequence[Run] = (), joint: str = "also") -> Text:
        mark = self.marks[view.id]
        text = Text()
        if via and via != "decided":
            text.append(f"{via} → ", style="italic")
        text.append(view.id)
        text.append(f" [{mark}]", style=MARK_STYLE.get(mark, ""))
        detail = "running" if view.id in running else state_text(view)
        # the mark already says `decided`: `[decided] NO-GO`, never `[decided] decided NO-GO`; `[unmerged] adopted`
        detail = detail.removeprefix(mark).strip()
        if detail:
            text.append(f" {detail}", style="dim")
        figure = last_estimate(view, list(runs), None)
        if figure != "-":
            text.append(f" {figure}")
        code = code_note(view)  # a branch lever: the commit to merge, where it landed, or what moved
        if code:
            text.append(f" · {code}", style="dim")
        if also:
            text.append(f" · {joint} after {', '.join(also)}", style="dim")
        if facts:
            text.append(f" + fact {', '.join(facts)}", style="dim")
        return text

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data:
            self.post_message(self.Chosen(event.node.data))
