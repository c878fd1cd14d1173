"""The plan and its live state written back as the seed's markdown doc: table, graphs, order, status, results."""
from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field

from optseq.state.plan import gates
from optseq.state.plan.gates import Atom
from optseq.state.report.labels import LABELS, MARKS, labels
from optseq.state.lifecycle.machine import DECIDED, MARK, LeverModel, PlanMachine
from optseq.state.plan.model import Lever, Plan

HISTORY_PER_LEVER = 10
"""Earlier decisions the export lists per lever; the rest are counted (`optseq runs LEVER` has them all)."""
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


def render(plan: Plan, machine: PlanMachine, records: dict[str, list[dict]] | None, *,
           lang: str | None = None, today: dt.date | str | None = None,
           charts: dict[str, str] | None = None) -> str:
    """The whole doc; `records` are the stored records already replayed onto `machine`.

    `charts`: lever id -> its chart's path relative to the doc (export_charts writes them), linked from the
    results; None for a doc whose charts are written nowhere (stdout, a preview), so it links none.
    """
    doc = _Doc(plan, machine, records or {}, labels(lang or plan.lang))
    doc.charts = dict(charts or {})
    return doc.render(today)


# -- making text safe to write ------------------------------------------------------------------------------
# Every text field the doc writes (plan text and stored text alike) is made safe once, by the writer
# of the place it lands: a table cell, a list item, a paragraph or a heading (a code span inside
# those), a fenced block, or a Mermaid label. Plan text is the doc's own markdown, so its inline
# markup (bold, code spans) stays; what no field may do is open raw HTML or an entity, or change the
# doc's block structure (start a heading, quote, list, table, fence or rule on a line of its own, or
# close a fence).

MARKER = "<!-- optseq export -->"
"""The last line of every export (`<!-- optseq export DATE -->` with a date): a file without it on its
last line was not written by optseq, and export_file will not replace it unforced."""
_MARKER_LINE = re.compile(r"<!-- optseq export(?: [^\n]*)? -->")

_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters (not tab, newline) and lone surrogates: nothing a doc should hold; U+FFFD instead."""
_MARKUP = re.compile(r"(\\*)(<(?=[A-Za-z/!?])|&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{0,31};))")
"""What would open raw HTML (a tag, closing tag, comment, declaration, processing instruction,
autolink) or spell an entity, with the backslashes right before it."""
_TICKS = re.compile("`+")
_LIST_ITEM = re.compile(r"(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]+|$)")
_ORDERED = re.compile(r"[0-9]{1,9}(?=[.)](?:[ \t]|$))")
_RULE = re.compile(r"[-*_=+ \t]+")
"""A line of only these is a thematic break or a setext underline (which would make the line above a heading)."""
_LINK_DEF = re.compile(r"\[[^\]]*\]:")
_MERMAID = {"#": "#35;", '"': "#quot;", "`": "#96;", "<": "#60;", ">": "#62;", "&": "#38;", "|": "#124;"}
"""Mermaid entity codes, put in one pass: a quoted label can then neither end early, turn into a markdown
string (a backtick), carry HTML (labels are rendered as HTML), split an edge label, nor spell an entity code
of its own (`#`)."""


def marker(day: str | None = None) -> str:
    """The export's last line; a date is kept to what cannot end the comment early."""
    if day is None:
        return MARKER
    day = re.sub(r"-{2,}", "-", _one_line(str(day)).replace("<", "").replace(">", "")).strip()
    return f"<!-- optseq export {day} -->" if day else MARKER


def is_export(text: str) -> bool:
    """Whether `text` (a file's content, or its tail) ends with an export's marker line."""
    last = text.rstrip().rpartition("\n")[2].strip()
    return bool(_MARKER_LINE.fullmatch(last))


def _plain(text) -> str:
    """str(text) with one kind of newline, and U+FFFD for control characters and lone surrogates."""
    return _UNPRINTABLE.sub("\ufffd", str(text).replace("\r\n", "\n").replace("\r", "\n"))


def _one_line(text) -> str:
    """_plain text on one line: newlines and tabs become spaces (labels, headings, code spans)."""
    return re.sub(r"[ \t]*[\n\t][ \t]*", " ", _plain(text))


def _html(text: str) -> str:
    """Text with no raw HTML or entity left: a `<` that would open a tag, comment or autolink is
    written `&lt;`, an `&` that would spell an entity `&amp;`; any other `<`, `>` or `&` stays.

    Everywhere, code spans included: renderers disagree on where a span ends (across lines, after an
    escaped backtick), and text a renderer reads outside a span must not be live HTML there. The cost
    is that such a `<` inside a code span shows as `&lt;`. A `<` the text escaped itself (`\\<`) means
    a literal `<` already: its backslash goes, or it would escape the `&` of `&lt;` and show it.
    """
    def escape(m: re.Match) -> str:
        slashes = m.group(1)[:len(m.group(1)) // 2 * 2]
        return slashes + ("&lt;" if m.group(2) == "<" else "&amp;")

    return _MARKUP.sub(escape, text)


def _line_start(body: str, lists: bool = False) -> str:
    """`body` (no leading blanks) made unable to open a block where it starts a line.

    `#` (heading), `>` (quote), `|` (table row), `=`, a rule, a list marker, `1.`, a fence and a link
    definition are backslash-escaped; a backslash escape renders as the character. (An HTML block
    needs a `<` that _html leaves as none.)
    With `lists`, a list item with content is kept (plan prose writes its reasons as sub-bullets) and
    its content is checked in turn.
    """
    if not body:
        return body
    item = _LIST_ITEM.match(body)
    if lists and item and body[item.end():].strip():
        return body[:item.end()] + _line_start(body[item.end():])
    if body.startswith(("```", "~~~")) or body[0] in "#>|=" or _RULE.fullmatch(body) or _LINK_DEF.match(body):
        return "\\" + body
    if body[0] in "-+*" and item:
        return "\\" + body
    ordered = _ORDERED.match(body)
    if ordered:
        return body[:ordered.end()] + "\\" + body[ordered.end():]
    return body


def _block(text: str, indent: str = "", prose: bool = False) -> str:
    """Text that lands where a line starts (a list item's content, a paragraph), kept to that block.

    Every line is made unable to open a block of its own (see _line_start) and HTML is escaped (see
    _html). Blank lines would end the block, so they go, and so do the lines' own indents;
    continuation lines get `indent`. `prose` is the plan's
    own paragraphs (intro, reasons): their blank lines (one at a time), indents and indented
    sub-bullets stay.
    """
    lines = _plain(text).split("\n")
    out: list[str] = []
    for line in lines:
        body = line.lstrip(" \t")
        if not body:
            if prose and out and out[-1]:
                out.append("")
            continue
        lead = line[:len(line) - len(body)] if prose and out else ""
        # the plan's reasons keep their indented sub-bullets (`   - …`, as the seed writes them); no line
        # of any field starts a list at its first column
        out.append(lead + _line_start(body, lists=bool(lead)).rstrip())
    while out and not out[-1]:
        out.pop()
    return _html("\n".join(line and indent + line for line in out).removeprefix(indent))


def cell(text) -> str:
    """Text made safe for one markdown table cell: no raw HTML, `|` escaped, newlines as `<br>`."""
    escaped = _html(_plain(text))
    # a backslash right before a `|` would escape the `\` of `\|` instead: doubled, it stays a backslash
    escaped = re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", escaped)
    return escaped.replace("\n", "<br>")


def code(text) -> str:
    """A code span holding `text`: fenced by a backtick run longer than any inside, padded where a
    backtick or a space at an end would otherwise be read as part of the fence or trimmed. A newline
    would end the span's line in a list item or paragraph, so it shows as ␤. (HTML is escaped where
    the span lands, as everywhere.)"""
    text = _UNPRINTABLE.sub("\ufffd", str(text).replace("\r\n", "\n").replace("\r", "\n")).replace("\n", "␤")
    fence = "`" * (max((len(m.group()) for m in _TICKS.finditer(text)), default=0) + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ") and text.strip()):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def fenced(lines: list[str], info: str = "") -> list[str]:
    """A fenced code block around `lines`, its fence longer than any backtick run inside, so no line closes it."""
    longest = max((len(m.group()) for line in lines for m in _TICKS.finditer(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *lines, fence]


def heading(level: int, text) -> str:
    """An ATX heading on one line; a trailing run of `#` (which would be read as its closing) is escaped."""
    body = _html(_one_line(text).strip())
    body = re.sub(r"(^|[ \t])(#+[ \t]*)$", lambda m: m.group(1) + "\\" + m.group(2), body)
    return "#" * level + " " + body


def short_name(lever: Lever) -> str:
    """The bold part of the title (`**AMP** trainer` → `AMP`), else the title."""
    bold = re.search(r"\*\*(.+?)\*\*", lever.title)
    return bold.group(1) if bold else lever.title


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
        self.label, self.suffix = _one_line(self.label), _one_line(self.suffix)

    @property
    def text(self) -> str:
        return self.label + self.suffix


class _Doc:
    def __init__(self, plan: Plan, machine: PlanMachine, records: dict[str, list[dict]], words: dict[str, str]):
        self.plan, self.m, self.records, self.w = plan, machine, records, words
        fresh = PlanMachine(plan)
        self.changed = {lid for lid, model in machine.models.items()
                        if _snapshot(model) != _snapshot(fresh.models[lid])}
        self.next = machine.next()

    def render(self, today) -> str:
        # a section with nothing to say is left out: a plan without order or decision points (a team's
        # starter plan) must not export empty headings as if the doc had lost them
        parts = [self.head(), self.table(), self.graph() if self.has_edges() else "",
                 self.order() if self.plan.order else "", self.hours() if self.plan.volume else "", self.status(),
                 self.points() if self.plan.decision_points else "", self.results()]
        parts = [part for part in parts if part]
        # always last, dated or not: the mark export_file looks for before it replaces a file
        day = None if today is None else today.isoformat() if isinstance(today, dt.date) else str(today)
        parts.append(marker(day))
        return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"

    # -- what a lever is now, in words ---------------------------------------------------------
    def model(self, lever_id: str) -> LeverModel:
        return self.m.models[lever_id]

    def mark(self, lever_id: str) -> str:
        return MARKS[MARK[self.model(lever_id).state]]

    def state_text(self, lever_id: str) -> str:
        w, model = self.w, self.model(lever_id)
        state = model.state
        if state in DECIDED:
            return self.decision_text(model.lever, model.outcome, model.decision or {})
        if state == "stale":
            return w["stale"].format(reason=model.stale_reason or model.outcome or "")
        if state == "closed":
            return w["closed"].format(reason=model.closed_by)
        if state == "ready":
            text = w["ready"] + (w["next"] if self.next == lever_id else "")
            if model.unavailable:
                text += " — " + w["unavailable"].format(reason=model.unavailable["reason"],
                                                        run=model.unavailable["run"])
        elif state == "unplanned":
            text = w["unplanned"]
        elif state == "running":
            run = self.latest("runs", lever_id)
            text = w["running"] + (f" ({run['id']})" if run and run.get("id") is not None else "")
        elif state == "measured":
            run = self.latest("runs", lever_id)
            summary = run.get("summary") if run else None
            text = w["measured"] + (f" ({summary})" if isinstance(summary, str) and summary else "")
            why = self.inconclusive_text(model)
            text += f" — {why}" if why else ""
        else:
            reasons = self.unmet(model.lever.requires)
            if model.needs_plan():
                reasons.append(w["no_plan"])
            text = w["blocked"].format(reasons=w["and"].join(reasons)) if reasons else state
        if model.lever.criteria:
            text += "; " + self.candidates(lever_id)
        return text

    def decision_text(self, lever: Lever, outcome: str | None, record: dict) -> str:
        """`NO-GO (2026-11-29, 자동: why)`, `adopt 1.42× [1.31, 1.55] (…)`, or a plan prior."""
        outcome = outcome or record.get("outcome") or ""
        if record.get("source") == "plan":
            estimate = lever.prior.estimate if lever.prior else None
            figure = f" {estimate:.2f}×" if estimate is not None else ""
            return f"{outcome}{figure} ({self.w['plan_source']})"
        stats = record.get("stats") or {}
        estimate, low, high = (_number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high"))
        figure = ""
        if estimate is not None:
            figure = f" {estimate:.2f}×" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None
                                            else "")
        how = self.w["auto"] if record.get("auto") else self.w["manual"]
        # with figures shown, an automatic decision's reason only repeats them; the results table has the rest
        why = "" if (estimate is not None and record.get("auto")) else str(record.get("why") or "").strip()
        meta = ", ".join(x for x in (_day(record.get("at")), how + (f": {why}" if why else "")) if x)
        return f"{outcome}{figure} ({meta})"

    def inconclusive_text(self, model: LeverModel) -> str:
        """Why a measured lever waits: its latest run could not tell, and what it was decided before that."""
        run = model.last_run or {}
        if model.state != "measured" or run.get("verdict") != "inconclusive":
            return ""
        reason = run.get("reason") or "—"
        cleared = model.cleared or {}
        if cleared.get("run") is not None and cleared.get("run") == run.get("id"):
            was = self.decision_text(model.lever, cleared.get("outcome"), cleared.get("decision") or {})
            return self.w["remeasured"].format(run=run.get("id"), reason=reason, was=was)
        return self.w["measured_inconclusive"].format(run=run.get("id"), reason=reason)

    def candidates(self, lever_id: str) -> str:
        lever = self.model(lever_id).lever
        words = {"pass": self.w["cand_pass"], "fail": self.w["cand_fail"], "pending": self.w["cand_pending"]}
        return ", ".join(f"{c.title or c.id} {words[self.m.candidate_status(lever_id, c)]}"
                         for c in lever.criteria.candidates)

    def unmet(self, expr) -> list[str]:
        """Why a gate does not hold, in the doc's language (gates.unmet says it in English for the CLI)."""
        ctx = self.m.context()
        if expr is None or gates.holds(expr, ctx):
            return []
        w = self.w
        if isinstance(expr, Atom):
            if expr.fact:
                return [w["needs_fact"].format(fact=expr.fact)]
            got = ctx.outcome_of(expr.lever)
            if got is None:
                if expr.outcome == "decided":
                    return [w["needs_decided"].format(lever=expr.lever)]
                return [w["needs_outcome"].format(lever=expr.lever, outcome=expr.outcome)]
            return [w["wrong_outcome"].format(lever=expr.lever, got=got, want=expr.outcome)]
        if expr.op == "all":
            return [reason for item in expr.items for reason in self.unmet(item)]
        return [w["or"].join(w["and"].join(self.unmet(item)) for item in expr.items)]

    def latest(self, table: str, lever_id: str) -> dict | None:
        mine = [r for r in self.records.get(table, ()) if r.get("lever") == lever_id]
        return max(mine, key=lambda r: r.get("seq", 0)) if mine else None

    def plan_words(self, lever_id: str, plan_text: str) -> str:
        """The plan's own words while nothing has happened to the lever since; generated text after."""
        if lever_id not in self.changed and plan_text:
            return plan_text
        return self.state_text(lever_id)

    # -- 1. title and the pending-levers table -------------------------------------------------------------
    def head(self) -> str:
        return heading(1, self.plan.title) + (f"\n\n{_block(self.plan.intro, prose=True)}" if self.plan.intro else "")

    def table(self) -> str:
        w = self.w
        rows = list(dict.fromkeys(self.plan.table))
        rows += [lever.id for lever in self.plan.levers if lever.id not in rows
                 and self.model(lever.id).state not in ("blocked", "closed", *DECIDED)]
        lines = [heading(2, w['pending']), "",
                 f"| {w['col_lever']} | {w['col_plan']} | {w['col_state']} |", "| --- | --- | --- |"]
        for lever_id in rows:
            lever, model = self.plan.lever(lever_id), self.model(lever_id)
            if model.plan_doc:
                where = code(model.plan_doc) + (f" ({lever.plan_note})" if lever.plan_note else "")
            elif lever.arms is not None:
                where = lever.plan_note or w["arms"]
            else:
                where = lever.plan_note or w["no_plan"]
            state = self.plan_words(lever_id, lever.status)
            lines.append(f"| {cell(lever.title)} | {cell(where)} | {cell(state)} |")
        return "\n".join(lines)

    # -- 2. dependency graph -------------------------------------------------------------------------------
    def has_edges(self) -> bool:
        return any(True for lever in self.plan.levers for _ in _edges(lever.requires))

    def graph(self) -> str:
        lines = [heading(2, self.w['graph'])]
        tree = self.tree()
        if tree:
            lines += ["", *fenced(tree)]
        lines += ["", *fenced(self.mermaid(), "mermaid")]
        return "\n".join(lines)

    def node_text(self, lever_id: str) -> tuple[str, str]:
        """(label, state mark); the mark appears only once the lever has moved since the plan."""
        model = self.model(lever_id)
        lever = model.lever
        label = lever.graph_label or short_name(lever)
        if lever.criteria and model.outcome is None:
            pending = [c.title or c.id for c in lever.criteria.candidates
                       if self.m.candidate_status(lever_id, c) == "pending"]
            if pending:
                label += f" ({', '.join(pending)} {self.w['cand_pending']})"
        if lever_id not in self.changed:
            return label, ""
        state = model.state
        if state in DECIDED:
            return label, f" {self.mark(lever_id)} {model.outcome}"
        if state == "closed":
            return label, " " + self.w["closed_mark"]
        if state == "stale":
            return label, " " + self.w["stale_mark"]
        return label, " " + self.mark(lever_id)

    def tree(self) -> list[str]:
        """A spanning tree of the requires-edges: each lever under its deepest prerequisite."""
        prereqs = {lever.id: [a for a, _ in _edges(lever.requires) if a.lever] for lever in self.plan.levers}
        members = {lid for lid, atoms in prereqs.items() if atoms}
        members |= {a.lever for atoms in prereqs.values() for a in atoms}
        depth: dict[str, int] = {}

        def depth_of(lid: str) -> int:
            if lid not in depth:
                depth[lid] = 1 + max((depth_of(a.lever) for a in prereqs[lid]), default=-1)
            return depth[lid]

        children: dict[str, list[tuple[str, str]]] = {lid: [] for lid in members}
        for lever in self.plan.levers:
            if prereqs[lever.id]:
                parent = max(prereqs[lever.id], key=lambda a: depth_of(a.lever))
                children[parent.lever].append((lever.id, parent.outcome))

        def build(lid: str) -> Node:
            label, suffix = self.node_text(lid)
            node = Node(label, suffix)
            kids = children[lid]
            criteria = self.model(lid).lever.criteria
            branches = criteria.branches if criteria else ()
            for branch in branches:
                under = [build(kid) for kid, outcome in kids if outcome == branch.outcome]
                label = _outcome_first(_one_line(branch.label), branch.outcome)
                text = label
                if self.model(lid).outcome == branch.outcome:
                    text += " " + self.w["taken"]
                if len(under) == 1 and label.endswith(under[0].label):
                    # the branch's label already names its one lever (`PASS → port 작업`): one line for both
                    node.children.append(Node(text, under[0].suffix, under[0].children, branch=True))
                else:
                    node.children.append(Node(text, "", under, branch=True))
            taken = {b.outcome for b in branches}
            node.children += [build(kid) for kid, outcome in kids if outcome not in taken]
            return node

        lines: list[str] = []
        for lever in self.plan.levers:
            if lever.id in members and not prereqs[lever.id]:
                root = build(lever.id)
                lines += ([""] if lines else []) + [root.text] + _below(root, "")
        return [line.rstrip() for line in lines]

    def mermaid(self) -> list[str]:
        name = _mermaid_id
        edges, levers, facts = [], [], []
        for lever in self.plan.levers:
            for atom, dashed in _edges(lever.requires):
                arrow = "-.->" if dashed else "-->"
                if atom.fact:
                    source = name("fact", atom.fact)
                    facts.append(atom.fact)
                    edges.append(f"    {source} {arrow} {name('lever', lever.id)}")
                else:
                    source = name("lever", atom.lever)
                    levers.append(atom.lever)
                    edges.append(f'    {source} {arrow}|"{_mermaid_text(atom.outcome)}"| {name("lever", lever.id)}')
                levers.append(lever.id)
        levers = [lever.id for lever in self.plan.levers if lever.id in levers]
        facts = list(dict.fromkeys(facts))
        lines = ["flowchart TD"]
        for lid in levers:
            label, suffix = self.node_text(lid)
            lines.append(f'    {name("lever", lid)}["{_mermaid_text(label + suffix)}"]')
        for fact in facts:
            value = self.m.facts.get(fact, False)
            lines.append(f'    {name("fact", fact)}(["{_mermaid_text(f"fact: {fact} = {str(value).lower()}")}"])')
        lines += edges
        for cls, style in MERMAID_STYLE.items():
            lines.append(f"    classDef {cls} {style}")
        groups: dict[str, list[str]] = {}
        for lid in levers:
            groups.setdefault(MERMAID_CLASS[self.model(lid).state], []).append(name("lever", lid))
        if facts:
            groups.setdefault("fact", []).extend(name("fact", f) for f in facts)
        for cls in MERMAID_STYLE:
            if groups.get(cls):
                lines.append(f"    class {','.join(groups[cls])} {cls}")
        return lines

    # -- 3. order, 4. status, 5. decision points -----------------------------------------------------------------
    def order(self) -> str:
        lines = [heading(2, self.w['order'])]
        for i, item in enumerate(self.plan.order, 1):
            done = bool(item.levers) and all(self.model(l).state in DECIDED for l in item.levers)
            head = f"**{i}. {_one_line(item.title)}**" + (f" {MARKS['done']}" if done else "")
            lines += ["", _block(head + (f" — {item.text}" if item.text else ""), prose=True)]
        return "\n".join(lines)

    def hours(self) -> str:
        """The hours-saved calculus (optseq.state.calculus.whatif): the figures behind the order, and where they disagree."""
        from optseq.state.calculus import whatif

        lang = next((k for k, v in LABELS.items() if v is self.w), "en")
        w = HOURS_WORDS[lang]
        report = whatif.compute(self.plan, self.m)
        volume = report["volume"]
        seconds = volume["s_per_iter"]
        source = w[volume["s_per_iter_source"]] + (f", {w['assumed']}" if volume.get("s_per_iter_assumed") else "")
        lines = [heading(2, w["heading"]), "",
                 _block(w["intro"].format(formula=code(report["formula"]), hours=whatif.fmt_h(volume["hours"]),
                                          s="—" if seconds is None else f"{seconds:g}", source=source))]
        if report["levers"]:
            lines += ["", "| " + " | ".join(w["cols"]) + " |", "|" + " --- |" * len(w["cols"])]
            for lv in report["levers"]:
                s_text = "—" if lv["s"] is None else f"{lv['s']:.2f}× {w[lv['s_source']]}"
                if lv["s_low"] is not None and lv["s_high"] is not None:
                    s_text += f" [{lv['s_low']:.2f}, {lv['s_high']:.2f}]"
                h = whatif.fmt_h(lv["h"])
                if lv["h_low"] is not None and lv["h_high"] is not None:
                    h += f" [{whatif.fmt_h(lv['h_low'])}, {whatif.fmt_h(lv['h_high'])}]"
                row = [self.plan.lever(lv["id"]).title, s_text,
                       "—" if lv["q"] is None else f"{lv['q']:.2f} {w[lv['q_source']]}",
                       f"{lv['share']:g}" + (f" ({w['default']})" if lv["share_source"] == "default" else ""),
                       whatif.fmt_h(lv["v_h"]), whatif.fmt_h(lv["cost_h"]), h, whatif.fmt_h(lv["v_star_h"])]
                lines.append("| " + " | ".join(cell(c) for c in row) + " |")
        lines.append("")
        if report["plan_order"]["order"]:
            lines.append(_bullet(f"{w['plan_order']}: {whatif.order_text(report['plan_order'])}"))
        if report.get("best_order"):
            lines.append(_bullet(f"{w['best_order']}: {whatif.order_text(report['best_order'])}"))
        for text in [report.get("verdict")] + [whatif.sequencing_text(s) for s in report.get("sequencing") or ()]:
            if text:
                lines.append(_bullet(text))
        for key, title in (("assumptions", "assumptions"), ("defaults", "defaults"), ("notes", "notes"),
                           ("missing", "missing_inputs")):
            if report.get(key):
                lines.append(_bullet(w[title] + ":"))
                lines += ["  " + _bullet(item) for item in report[key]]
        return "\n".join(lines)

    def status(self) -> str:
        latest = max((r for recs in self.records.values() for r in recs if r.get("at")),
                     key=lambda r: (r.get("seq", 0), str(r.get("at"))), default=None)
        day = _day(latest["at"]) if latest else self.plan.as_of.isoformat()
        lines = [heading(2, self.w['status'].format(date=day)), ""]
        listed = set()
        for item in self.plan.status:
            lever = self.plan.lever(item.lever)
            listed.add(item.lever)
            if item.about == "code":
                mark = MARKS["done"] if lever.code != "none" else MARKS["waiting"]
                text = item.text if item.lever not in self.changed else f"{item.text} — {self.state_text(item.lever)}"
            else:
                mark = self.mark(item.lever)
                text = item.text if item.lever not in self.changed else \
                    f"{short_name(lever)}: {self.state_text(item.lever)}"
            lines.append(_bullet(f"{mark} {text}"))
        for lever in self.plan.levers:
            if lever.id in self.changed and lever.id not in listed:
                lines.append(_bullet(f"{self.mark(lever.id)} {short_name(lever)}: {self.state_text(lever.id)}"))
        return "\n".join(lines)

    def points(self) -> str:
        fired: dict[str, dict] = {}
        for event in self.records.get("events", ()):
            if event.get("type") != "decision_point":
                continue
            point = event.get("point", event.get("id"))
            if point not in fired or event.get("seq", 0) >= fired[point].get("seq", 0):
                fired[point] = event
        lines = [heading(2, self.w['points']), "", self.w["points_intro"]]
        for point in self.plan.decision_points:
            text = point.text
            if point.id in fired:
                text += self.w["fired"].format(date=_day(fired[point.id].get("at")))
                if point.reopens:
                    names = ", ".join(short_name(self.plan.lever(l)) for l in point.reopens)
                    text += self.w["reopens"].format(levers=names)
            lines.append(_bullet(text))
        return "\n".join(lines)

    # -- 6. results ---------------------------------------------------------------------------------------------
    def results(self) -> str:
        w = self.w
        rows, history = [], []
        decisions = [r for r in self.records.get("decisions", ()) if self.plan.has_lever(r.get("lever", ""))]
        replaced = {r.get("supersedes") for r in decisions if r.get("supersedes") is not None}
        for lever in self.plan.levers:
            model = self.model(lever.id)
            record = model.decision
            note = w["stale"].format(reason=model.stale_reason) if model.state == "stale" else ""
            if record is not None and record.get("source") == "plan":
                if lever.prior and lever.prior.estimate is not None:
                    rows.append([lever.title, model.outcome or "", "—", f"{lever.prior.estimate:.2f}×", "—", "—",
                                 "—", self.plan.as_of.isoformat(), w["plan_source"], note])
            elif record is not None and record.get("stats"):
                rows.append([lever.title, model.outcome or "", *self.stats_cells(record["stats"]),
                             _day(record.get("at")), w["auto"] if record.get("auto") else w["manual"], note])
            elif record is None and self.inconclusive_text(model):
                # the latest evidence rules: an inconclusive run's figures, with why and what it replaced
                run = self.latest("runs", lever.id) or {}
                stats = (run.get("summary") or {}).get("stats") if isinstance(run.get("summary"), dict) else None
                cells = self.stats_cells(stats) if stats else ["—"] * 5
                rows.append([lever.title, w["inconclusive"], *cells, _day(run.get("ended") or run.get("at")),
                             w["auto"], self.inconclusive_text(model)])
            past = [(0, lever, lever.prior.outcome, {"source": "plan"})] if lever.prior and model.decision_seq != 0 \
                else []
            for r in sorted((r for r in decisions if r["lever"] == lever.id), key=lambda r: r.get("seq", 0)):
                if r.get("superseded") or r.get("id") in replaced or r.get("seq") != model.decision_seq:
                    past.append((r.get("seq", 0), lever, r.get("outcome"), r))
            if len(past) > HISTORY_PER_LEVER:
                # a doc that lists every decision of a long-lived store is read by nobody: the newest, and a count
                earlier = len(past) - HISTORY_PER_LEVER
                past = [(0, lever, None, {"earlier": earlier})] + past[-HISTORY_PER_LEVER:]
            history += past
        lines = [heading(2, w['results']), ""]
        if rows:
            head = [w[k] for k in ("col_lever", "col_outcome", "col_metric", "col_ratio", "col_ci", "col_n", "col_p",
                                   "col_date", "col_source", "col_note")]
            lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            lines += ["| " + " | ".join(cell(str(c)) for c in row) + " |" for row in rows]
        links = self.chart_links()
        if links:
            lines += (["", *links] if rows else links)
        if history:
            lines += (["", heading(3, w['history']), ""] if rows or links else [heading(3, w['history']), ""])
            gone = self.superseded_reasons()
            lines += [_bullet(f"{lever.title}: " + w["history_more"].format(n=record["earlier"], lever=lever.id))
                      if "earlier" in record else
                      _bullet(f"{lever.title}: {self.decision_text(lever, outcome, record)}"
                              + (f" — {w['superseded_by'].format(reason=gone[record['id']])}"
                                 if record.get("id") in gone else ""))
                      for _, lever, outcome, record in history]
        if not rows and not history and not links:
            lines.append(w["nothing_measured"])
        return "\n".join(lines)

    charts: dict[str, str] = {}
    """lever id -> its chart's relative path (render sets it per doc; never mutated in place)."""

    def chart_links(self) -> list[str]:
        """One image per charted lever, in plan order, each its own paragraph (blank lines between)."""
        from urllib.parse import quote

        out: list[str] = []
        for lever in self.plan.levers:
            path = self.charts.get(lever.id)
            if path:
                # percent-encoded: a space, bracket or parenthesis in the doc's name would end the link early
                alt = re.sub(r"([\\\[\]])", r"\\\1", _one_line(f"{lever.id}: estimate and 95% CI per run"))
                out += ([""] if out else []) + [f"![{_html(alt)}]({quote(path)})"]
        return out

    def superseded_reasons(self) -> dict:
        """decision id -> why it left the stack, from the derived `superseded` events (reversal, re-measure)."""
        return {e["decision"]: e.get("reason", "") for e in self.records.get("events", ())
                if e.get("type") == "superseded" and e.get("decision") is not None}

    def stats_cells(self, stats: dict) -> list[str]:
        estimate, low, high, p = (_number(stats.get(k)) for k in ("estimate", "ci_low", "ci_high", "p_value"))
        n = stats.get("n")
        return [
            str(stats.get("metric") or "—"),
            f"{estimate:.2f}×" if estimate is not None else "—",
            f"[{low:.2f}, {high:.2f}]" if low is not None and high is not None else "—",
            str(n) if n is not None else "—",
            ("<0.001" if p < 0.001 else f"{p:.3f}") if p is not None else "—",
        ]


HOURS_WORDS = {
    "ko": {
        "heading": "시간 절약 (hours saved)",
        "intro": "{formula} — S: 측정값 또는 prior, q: 채택 확률, share: lever가 빠르게 하는 iteration 비율, "
                 "V: lever 뒤에 남은 계획 실험 시간, C: run 시간 + effort. 계획 volume {hours} h, "
                 "iteration당 {s} s ({source}).",
        "cols": ("Lever", "S", "q", "share", "V (h)", "C (h)", "H (h)", "V* (h)"),
        "measured": "측정", "prior": "prior", "adopted": "adopt", "rejected": "reject", "declared": "선언",
        "missing": "없음", "assumed": "가정", "default": "기본값",
        "plan_order": "권장 순서 (plan)", "best_order": "최대 절약 순서",
        "assumptions": "가정", "defaults": "기본값", "notes": "참고", "missing_inputs": "빠진 입력",
    },
    "en": {
        "heading": "Hours saved",
        "intro": "{formula} — S: measured or a prior, q: the chance of adoption, share: the part of an iteration "
                 "the lever speeds up, V: planned experiment hours after the lever, C: its runs' hours plus "
                 "effort. Planned volume {hours} h at {s} s per iteration ({source}).",
        "cols": ("Lever", "S", "q", "share", "V (h)", "C (h)", "H (h)", "V* (h)"),
        "measured": "measured", "prior": "prior", "adopted": "adopted", "rejected": "rejected",
        "declared": "declared", "missing": "missing", "assumed": "assumed", "default": "default",
        "plan_order": "Plan's order", "best_order": "Order that saves most",
        "assumptions": "Assumptions", "defaults": "Defaults", "notes": "Notes", "missing_inputs": "Missing inputs",
    },
}
"""The hours-saved section's words (the calculus's own sentences are English, as the CLI prints them)."""



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


def _snapshot(model: LeverModel) -> tuple:
    return model.state, model.outcome, model.plan_doc, dict(model.results), model.decision_seq


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


def _mermaid_text(text) -> str:
    """A quoted Mermaid label's text: on one line, with the characters in _MERMAID as entity codes."""
    return "".join(_MERMAID.get(c, c) for c in _one_line(text))


def _bullet(text) -> str:
    """A list item; continuation lines of multi-line text stay inside it and open no block of their own."""
    return "- " + _block(text, indent="  ")


def _number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _day(at) -> str:
    """The UTC date of an ISO-8601 timestamp (the store writes UTC)."""
    if not at:
        return ""
    try:
        when = dt.datetime.fromisoformat(str(at))
    except ValueError:
        return str(at)[:10]
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc)
    return when.date().isoformat()
