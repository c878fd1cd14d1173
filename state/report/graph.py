"""The dependency graph section: the requires-edges as a text tree and as a Mermaid flowchart."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from optseq.state.plan.gates import Atom
from optseq.state.lifecycle.states import DECIDED
from optseq.state.report.escape import fenced, heading, mermaid_text, one_line
from optseq.state.report.context import DocContext
from optseq.state.report.lever_words import LeverWords, short_name

FAN_WIDTH = 100
"""Widest line (display columns) a row of sibling leaves may take before they are listed vertically."""
FAN_GAP = 3

MERMAID_CLASS = {"ready": "ready", "running": "ready", "measured": "ready", "blocked": "blocked",
                 "unplanned": "blocked", "stale": "stale", "closed": "closed",
                 **{state: "decided" for state in DECIDED}}
MERMAID_STYLE = {
    "ready": "fill:#fff3bf,stroke:#f08c00,color:#000",
    "blocked": "fill:#f1f3f5,stroke:#868e96,color:#495057",
    "decided": "fill:#d3f9d8,stroke:#2f9e44,color:#000",
    "stale": "fill:#ffe3e3,stroke:#e03131,color:#000",
    "closed": "fill:#e9ecef,stroke:#adb5bd,color:#adb5bd,stroke-dasharray:4 3",
    "fact": "fill:#e7f5ff,stroke:#1c7ed6,color:#000",
}


def width(text: str) -> int:
    """Display columns in a monospace font (Hangul and other wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


@dataclass
class Node:
    """One line of the text tree: a lever (label + state mark) or a decision's branch."""

    label: str
    suffix: str = ""
    children: list["Node"] = field(default_factory=list)
    branch: bool = False

    def __post_init__(self) -> None:
        # a newline or tab in a label would break the tree's geometry (and its fence's lines)
        self.label, self.suffix = one_line(self.label), one_line(self.suffix)

    @property
    def text(self) -> str:
        return self.label + self.suffix


class Graph:
    """Section 2: the graph, its tree and its Mermaid; each lever's state from the doc's LeverWords."""

    def __init__(self, ctx: DocContext, levers: LeverWords):
        self.ctx, self.levers = ctx, levers

    def has_edges(self) -> bool:
        return any(True for lever in self.ctx.plan.levers for _ in _edges(lever.requires))

    def section(self) -> str:
        lines = [heading(2, self.ctx.labels['graph'])]
        tree = self.tree()
        if tree:
            lines += ["", *fenced(tree)]
        lines += ["", *fenced(self.mermaid(), "mermaid")]
        return "\n".join(lines)

    def node_text(self, lever_id: str) -> tuple[str, str]:
        """(label, state mark); the mark appears only once the lever has moved since the plan."""
        model, lever = self.levers.model(lever_id), self.levers.lever(lever_id)
        label = lever.graph_label or short_name(lever)
        if lever.criteria and model.outcome is None:
            pending = [c.title or c.id for c in lever.criteria.candidates
                       if self.ctx.machine.candidate_status(lever_id, c) == "pending"]
            if pending:
                label += f" ({', '.join(pending)} {self.ctx.labels['cand_pending']})"
        if lever_id not in self.ctx.changed:
            return label, ""
        state = model.state
        if state in DECIDED:
            return label, f" {self.levers.mark(lever_id)} {model.outcome}" + (
                f" ({self.ctx.labels['eroded_mark']})" if self.levers.eroded(lever_id) else "")
        if state == "closed":
            return label, " " + self.ctx.labels["closed_mark"]
        if state == "stale":
            return label, " " + self.ctx.labels["stale_mark"]
        return label, " " + self.levers.mark(lever_id)

    def tree(self) -> list[str]:
        """A spanning tree of the requires-edges: each lever under its deepest prerequisite."""
        prereqs = {lever.id: [a for a, _ in _edges(lever.requires) if a.lever] for lever in self.ctx.plan.levers}
        members = {lid for lid, atoms in prereqs.items() if atoms}
        members |= {a.lever for atoms in prereqs.values() for a in atoms}
        depth: dict[str, int] = {}

        def depth_of(lid: str) -> int:
            if lid not in depth:
                depth[lid] = 1 + max((depth_of(a.lever) for a in prereqs[lid]), default=-1)
            return depth[lid]

        children: dict[str, list[tuple[str, str]]] = {lid: [] for lid in members}
        for lever in self.ctx.plan.levers:
            if prereqs[lever.id]:
                parent = max(prereqs[lever.id], key=lambda a: depth_of(a.lever))
                children[parent.lever].append((lever.id, parent.outcome))

        def build(lid: str) -> Node:
            label, suffix = self.node_text(lid)
            node = Node(label, suffix)
            kids = children[lid]
            criteria = self.levers.lever(lid).criteria
            branches = criteria.branches if criteria else ()
            for branch in branches:
                under = [build(kid) for kid, outcome in kids if outcome == branch.outcome]
                label = _outcome_first(one_line(branch.label), branch.outcome)
                text = label
                if self.levers.model(lid).outcome == branch.outcome:
                    text += " " + self.ctx.labels["taken"]
                if len(under) == 1 and label.endswith(under[0].label):
                    # the branch's label already names its one lever (`PASS → port 작업`): one line for both
                    node.children.append(Node(text, under[0].suffix, under[0].children, branch=True))
                else:
                    node.children.append(Node(text, "", under, branch=True))
            taken = {b.outcome for b in branches}
            node.children += [build(kid) for kid, outcome in kids if outcome not in taken]
            return node

        lines: list[str] = []
        for lever in self.ctx.plan.levers:
            if lever.id in members and not prereqs[lever.id]:
                root = build(lever.id)
                lines += ([""] if lines else []) + [root.text] + _below(root, "")
        return [line.rstrip() for line in lines]

    def mermaid(self) -> list[str]:
        name = _mermaid_id
        edges, levers, facts = [], [], []
        for lever in self.ctx.plan.levers:
            for atom, dashed in _edges(lever.requires):
                arrow = "-.->" if dashed else "-->"
                if atom.fact:
                    source = name("fact", atom.fact)
                    facts.append(atom.fact)
                    edges.append(f"    {source} {arrow} {name('lever', lever.id)}")
                else:
                    source = name("lever", atom.lever)
                    levers.append(atom.lever)
                    edges.append(f'    {source} {arrow}|"{mermaid_text(atom.outcome)}"| {name("lever", lever.id)}')
                levers.append(lever.id)
        levers = [lever.id for lever in self.ctx.plan.levers if lever.id in levers]
        facts = list(dict.fromkeys(facts))
        lines = ["flowchart TD"]
        for lid in levers:
            label, suffix = self.node_text(lid)
            lines.append(f'    {name("lever", lid)}["{mermaid_text(label + suffix)}"]')
        for fact in facts:
            value = self.ctx.machine.facts.get(fact, False)
            lines.append(f'    {name("fact", fact)}(["{mermaid_text(f"fact: {fact} = {str(value).lower()}")}"])')
        lines += edges
        for cls, style in MERMAID_STYLE.items():
            lines.append(f"    classDef {cls} {style}")
        groups: dict[str, list[str]] = {}
        for lid in levers:
            # a gain gone is not done
            cls = "stale" if self.levers.eroded(lid) else MERMAID_CLASS[self.levers.model(lid).state]
            groups.setdefault(cls, []).append(name("lever", lid))
        if facts:
            groups.setdefault("fact", []).extend(name("fact", f) for f in facts)
        for cls in MERMAID_STYLE:
            if groups.get(cls):
                lines.append(f"    class {','.join(groups[cls])} {cls}")
        return lines


def _outcome_first(label: str, outcome: str) -> str:
    """A branch label `PASS → x` spoken in the gate's own outcome, `GO → x`: the words the console shows.

    Only a one-word head before the arrow is the outcome's slot; any other label is the plan's prose, kept."""
    head, arrow, rest = label.partition(" → ")
    if arrow and head and " " not in head and head != outcome:
        return f"{outcome} → {rest}"
    return label


def _below(node: Node, prefix: str) -> list[str]:
    """The lines under `node`, whose own line starts at column len(prefix); its stem runs at +3."""
    kids = node.children
    if not kids:
        return []
    stem = prefix + "   │"
    if not any(k.branch for k in kids):
        if len(kids) == 1:
            return [stem, prefix + "   ▼", prefix + kids[0].text] + _below(kids[0], prefix)
        if not any(k.children for k in kids):
            fan = _fan(kids, prefix)
            if fan:
                return [stem] + fan
    lines = [stem]
    for i, kid in enumerate(kids):
        last = i == len(kids) - 1
        lines.append(prefix + ("   └── " if last else "   ├── ") + kid.text)
        lines += _below(kid, prefix + ("       " if last else "   │   "))
    return lines


def _fan(kids: list[Node], prefix: str) -> list[str] | None:
    """Sibling leaves side by side, each under its own arrow (like the seed's last row); None if too wide."""
    starts, x = [], len(prefix)
    for kid in kids:
        starts.append(x)
        x += width(kid.text) + FAN_GAP
    if starts[-1] + width(kids[-1].text) > FAN_WIDTH:
        return None
    arrows = [s + 3 for s in starts]
    row = [" "] * (arrows[-1] + 1)
    for col in range(arrows[0], arrows[-1]):
        row[col] = "─"
    for col in arrows[1:-1]:
        row[col] = "┬"
    row[arrows[0]], row[arrows[-1]] = "├", "┐"
    heads = [" "] * (arrows[-1] + 1)
    for col in arrows:
        heads[col] = "▼"
    labels_row = prefix + "".join(kid.text + " " * FAN_GAP for kid in kids)
    return [prefix + "".join(row[len(prefix):]), prefix + "".join(heads[len(prefix):]), labels_row]


def _edges(expr, dashed: bool = False):
    """(atom, dashed) for every atom of a gate; dashed when it is one alternative of an `any`."""
    if expr is None:
        return
    if isinstance(expr, Atom):
        yield expr, dashed
        return
    for item in expr.items:
        yield from _edges(item, dashed or (expr.op == "any" and len(expr.items) > 1))


def _mermaid_id(kind: str, ident: str) -> str:
    """A Mermaid node id for a lever or fact, one-to-one for any ident.

    Plain idents (ASCII letters, digits, _) read as themselves: `l_amp`. Any other is spelt out
    under its own prefix (`lx_`, `fx_`): `_` as `__`, `-` as `_h`, anything else `_u<hex>_`, so no two
    idents meet. The `l`/`f` lead keeps keywords (`end`, `graph`, `class`, `style`) and Mermaid's
    lead-character tokens (`v`, digits, `o`/`x` after a link) from being read into an id.
    """
    lead = kind[0]
    if re.fullmatch(r"[A-Za-z0-9_]+", ident):
        return f"{lead}_{ident}"
    spelt = "".join(c if c.isascii() and c.isalnum() else "__" if c == "_" else "_h" if c == "-"
                    else f"_u{ord(c):x}_" for c in ident)
    return f"{lead}x_{spelt}"
