"""The dependency graph as a tree: each lever under the levers its gates wait on, marked ready / blocked / decided / stale."""
from __future__ import annotations

from collections.abc import Collection

from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree

from optseq.console.widgets.figures import STATE_MARK, state_text
from optseq.state.gates import atoms

MARK_STYLE = {"ready": "bold green", "blocked": "dim", "decided": "cyan", "stale": "bold yellow",
              "closed": "dim strike"}


class DependencyGraph(Tree[str]):
    """Roots are levers with no lever gate; a lever with two parents shows under both."""

    @dataclass
    class Chosen(Message):
        """Enter on a node: make that lever the selected one."""

        lever: str

    def __init__(self, **kwargs) -> None:
        super().__init__("plan", **kwargs)
        self.show_root = False
        self.marks: dict[str, str] = {}
        """lever id -> its mark as last drawn (ready, blocked, decided, stale, closed)."""

    def show(self, plan, views: list[dict], running: Collection[str] = ()) -> None:
        by_id = {v["id"]: v for v in views}
        parents: dict[str, list[tuple[str, str]]] = {}
        facts: dict[str, list[str]] = {}
        for lever in plan.levers:
            for atom in atoms(lever.requires):
                if atom.fact:
                    facts.setdefault(lever.id, []).append(atom.fact)
                elif (atom.lever, atom.outcome) not in parents.get(lever.id, []):
                    parents.setdefault(lever.id, []).append((atom.lever, atom.outcome))
        children: dict[str, list[tuple[str, str]]] = {}
        for child, edges in parents.items():
            for parent, outcome in edges:
                children.setdefault(parent, []).append((child, outcome))
        self.marks = {v["id"]: ("ready" if v["id"] in running else STATE_MARK.get(v["state"], "blocked"))
                      for v in views}
        line = self.cursor_line
        self.clear()

        def add(node, lever_id: str, via: str | None, depth: int) -> None:
            label = self._label(by_id[lever_id], via, facts.get(lever_id, []), running)
            kids = children.get(lever_id, []) if depth < len(views) else []
            branch = node.add(label, data=lever_id, expand=True, allow_expand=bool(kids))
            for child, outcome in kids:
                add(branch, child, outcome, depth + 1)

        for lever in plan.levers:
            if lever.id not in parents:
                add(self.root, lever.id, None, 0)
        self.cursor_line = max(0, line)

    def _label(self, view: dict, via: str | None, facts: list[str], running: Collection[str] = ()) -> Text:
        mark = self.marks[view["id"]]
        text = Text()
        if via and via != "decided":
            text.append(f"{via} → ", style="italic")
        text.append(view["id"])
        text.append(f" [{mark}]", style=MARK_STYLE.get(mark, ""))
        detail = "running" if view["id"] in running else state_text(view)
        if detail != mark:
            text.append(f" {detail}", style="dim")
        if facts:
            text.append(f" + fact {', '.join(facts)}", style="dim")
        return text

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data:
            self.post_message(self.Chosen(event.node.data))
