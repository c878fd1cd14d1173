"""Export: no text field, from the plan or from the store, can write markup or change the doc's structure.

Every field gets the same payload: raw HTML (`<script>`, `<div>`, a comment, an entity) and, on lines
of their own, a heading, a fence, a quote, a list item, a table row and a rule. The doc is built by
the real CLI (plan file, `record`, `decide`, lever runs) and read back with markdown-it, the
CommonMark parser Textual's Markdown (the console's preview) and VS Code render with. The plan doc path
holds newlines and control characters, which `optseq plan` now refuses: it is stored through the Python
API (`seq.actions.write_plan` without `check`), as an older store or another tool may hold it.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from optseq.state.report import escape
from optseq.state.report.marker import is_export, marker
from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ

# on one parallel worker (make test runs pytest -n): its stores are built once
pytestmark = pytest.mark.xdist_group("export_escaping")

AB = Path(__file__).parents[1] / "lever_scripts" / "ab.py"


def payload(tag: str) -> str:
    return (f"{tag} <script>{tag}</script> &copy; <!-- c --> a\n# {tag}-h\n```\n> {tag}-q\n- {tag}-li\n"
            f"   # {tag}-ih\n| {tag} | t |\n---\n<div>{tag}</div>\n1. {tag}-ol\n`` ` \" \\ end")


def toml(tag: str) -> str:
    return json.dumps(payload(tag))  # a JSON string is a TOML basic string


PLAN = f"""
[plan]
title = {toml("doctitle")}
intro = {toml("intro")}
as_of = 2026-01-01
lang = "en"

[facts.dense]
value = false

[[levers]]
id = "gate"
title = {toml("gate-title")}
kind = "decision"
plan_doc = "docs/gate.md"
status = {toml("gate-status")}
plan_note = {toml("gate-note")}
graph_label = {toml("gate-graph")}
[levers.criteria]
criteria = [{{ id = "c1", title = {toml("crit-title")} }}]
candidates = [{{ id = "cand", title = {toml("cand-title")} }}]
[levers.criteria.branches.GO]
label = {toml("branch-go")}
opens = ["after"]
[levers.criteria.branches.NO-GO]
label = {toml("branch-nogo")}
closes = ["after"]

[[levers]]
id = "after"
title = {toml("after-title")}
kind = "speedup"
requires = ["gate:GO", "fact:dense"]
status = {toml("after-status")}

[[levers]]
id = "runner"
title = {toml("runner-title")}
kind = "speedup"
plan_doc = "docs/runner.md"
run = {json.dumps([sys.executable, "-c", "import json; print(json.dumps("
                   f"{{'event': 'unavailable', 'reason': {payload('lever-reason')!r}}}))"])}
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 1, max_repeats = 5 }}

[[levers]]
id = "measured"
title = {toml("measured-title")}
kind = "speedup"
plan_doc = "docs/measured.md"
run = {json.dumps([sys.executable, str(AB), "--ratio", "1.5"])}
rule = {{ metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12 }}

[[order]]
title = {toml("order-title")}
levers = ["gate"]
text = {toml("order-text")}

[[status]]
lever = "gate"
text = {toml("status-text")}

[[decision_points]]
id = "dp"
lever = "gate"
on = "decided"
text = {toml("point-text")}
reopens = ["after"]
"""

PLAN_DOC = "docs/`a``b`/x\n" + payload("plandoc")

PLAN_FIELDS = ["doctitle", "intro", "gate-title", "gate-status", "gate-note", "gate-graph", "cand-title", "branch-go",
               "branch-nogo", "after-title", "after-status", "runner-title", "measured-title", "order-title",
               "order-text", "status-text", "point-text"]
STORED_FIELDS = ["plandoc", "why1", "why2", "lever-reason", "evidence"]
NOT_WRITTEN = {"crit-title", "evidence"}
"""Criterion titles and criteria evidence are kept in the store but are not part of the doc."""
GRAPH_FIELDS = {"gate-graph", "cand-title", "branch-go", "branch-nogo", "after-title"}
"""The labels of the text graph and the Mermaid chart."""
PROSE = {"intro", "order-text"}
"""The plan's own paragraphs: they keep indented sub-bullets (the seed writes its reasons so)."""


def cli(env, *args) -> str:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 3), (args, proc.stdout, proc.stderr)  # 3: the runner lever is unavailable
    assert "Traceback" not in proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, str]:
    """{"fresh": the plan's own text, "after": with every kind of stored text in it}."""
    import os

    root = tmp_path_factory.mktemp("escaping")
    plan = root / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    env = dict(os.environ, OPTSEQ_PLAN=str(plan), OPTSEQ_DB=str(root / "state"))
    Sequencer.open(plan, root / "state", mode="write").close()  # a read refuses a store path with no store
    fresh = cli(env, "export")
    cli(env, "fact", "dense", "true")
    # the CLI refuses a path with control characters; the store still takes one unchecked from Python
    with Sequencer.open(plan, root / "state", mode="write") as seq:
        # on a lever still pending at the end: the pending table lists no decided lever
        seq.actions.write_plan("runner", PLAN_DOC)
        assert next(v for v in seq.views.status().levers if v.id == "runner").plan_doc == PLAN_DOC  # kept as is
    cli(env, "--run", "measured")  # first: its device differs, and a device change forgets `unavailable`
    cli(env, "--run", "runner")
    cli(env, "record", "gate", "cand", "c1", "pass", "--evidence", payload("evidence"))
    cli(env, "decide", "after", "reject", "--why", payload("why1"))
    cli(env, "decide", "after", "adopt", "--why", payload("why2"))
    return {"fresh": fresh, "after": cli(env, "export")}


MD = MarkdownIt("commonmark").enable("table")


def blocks(doc: str) -> list:
    return MD.parse(doc)


# -- the doc's structure is its own, whatever the fields hold --------------------------------------------------
@pytest.mark.parametrize("which", ["fresh", "after"])
def test_the_structure_is_the_docs_own(docs, which):
    tokens = blocks(docs[which])
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert [tag for tag, _ in headings][:1] == ["h1"] and [tag for tag, _ in headings].count("h1") == 1
    names = [text for tag, text in headings[1:]]
    ours = re.compile(r"Pending levers|Dependency graph|Recommended order and reasons|"
                      r"Current status \(\d{4}-\d\d-\d\d\)|Decision points|Results|History")
    assert all(ours.fullmatch(n) for n in names), names
    assert [t.info for t in tokens if t.type == "fence"] == ["", "mermaid"]
    assert [t.content for t in tokens if t.type == "html_block"] == ["<!-- optseq export -->\n"]
    inline_html = {c.content for t in tokens if t.type == "inline" for c in t.children or () if c.type == "html_inline"}
    assert inline_html <= {"<br>"}
    for kind in ("blockquote_open", "hr", "ordered_list_open", "code_block"):
        assert not [t for t in tokens if t.type == kind], kind
    # every table row has its table's columns: no field added a cell
    widths = []
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            j, cells = i + 1, 0
            while tokens[j].type != "tr_close":
                cells += tokens[j].type in ("td_open", "th_open")
                j += 1
            widths.append(cells)
    # the pending table: its head and a row a lever (fresh: all four; after: the runner alone, the rest decided)
    assert set(widths) <= {3, 10} and widths.count(3) == (5 if which == "fresh" else 2), widths
    if which == "after":
        assert widths.count(10) == 2  # the results table: head and the measured lever
    html = MD.render(docs[which])
    assert "<script" not in html and "<div" not in html and "<!-- c" not in html


@pytest.mark.parametrize("tag", PLAN_FIELDS + STORED_FIELDS)
def test_a_field_writes_no_markup_and_no_block(docs, tag):
    found = False
    for which, doc in docs.items():
        tokens = blocks(doc)
        for i, t in enumerate(tokens):
            if tag not in t.content:
                continue
            found = True
            assert t.type in ("inline", "fence"), (which, t.type, t.content[:80])  # no html_block, no code_block
            if t.type == "fence":
                # only the graph's labels are in a fence, and that fence is the graph's own
                assert tag in GRAPH_FIELDS and t.info in ("", "mermaid"), (which, tag, t.info)
                continue
            # the injected heading, quote, rule and list items stay text of the field's own block
            before = tokens[i - 1]
            if before.type == "heading_open":
                assert tag == "doctitle" and before.tag == "h1", (which, t.content[:80])
            assert not t.content.startswith((f"{tag}-h", f"{tag}-li", f"{tag}-ol", f"{tag}-q")), (which, t.content)
            if tag not in PROSE:
                # outside the plan's paragraphs, a field is one list item, paragraph, cell or heading
                assert before.type in ("paragraph_open", "td_open", "th_open", "heading_open"), before.type
            for child in t.children or ():
                assert child.type != "html_inline" or child.content == "<br>", (which, child.content)
        html = MD.render(doc)
        assert f"<script>{tag}" not in html and f"<div>{tag}" not in html
    assert found != (tag in NOT_WRITTEN), f"{tag} {'missing from' if not found else 'written in'} the export"


@pytest.mark.parametrize("tag", sorted(PROSE))
def test_the_plans_paragraphs_keep_their_indented_sub_bullets_only(docs, tag):
    tokens = blocks(docs["fresh"])
    items = [tokens[i + 2].content for i, t in enumerate(tokens) if t.type == "list_item_open"
             and tag in tokens[i + 2].content]
    # `   # tag-ih` is the only indented line of the payload: it stays a line of text, its `#` escaped
    assert f"\\# {tag}-ih" in docs["fresh"]
    assert not [c for c in items if c.startswith(f"{tag}-li")]


def test_a_heading_is_one_line_and_keeps_its_text(docs):
    first = docs["fresh"].splitlines()[0]
    # mid-line, the payload's `#`, `>`, `-` and fence are text; only a trailing `#` run would be markup
    assert first == ("# doctitle &lt;script>doctitle&lt;/script> &amp;copy; &lt;!-- c --> a # doctitle-h ``` > "
                     "doctitle-q - doctitle-li # doctitle-ih | doctitle | t | --- &lt;div>doctitle&lt;/div> "
                     "1. doctitle-ol `` ` \" \\ end")
    (h1,) = [t for t in blocks(docs["fresh"]) if t.type == "inline"][:1]
    assert h1.content == first[2:]


def test_stored_text_is_visible_as_text(docs):
    html = MD.render(docs["after"])
    # shown, not run and not dropped (where an earlier field's stray backticks pair with this one's, the
    # text lands in a code span and its escape shows: `&lt;` is written inside code spans too)
    for tag in ("why2", "lever-reason"):
        assert f"&lt;script&gt;{tag}&lt;/script&gt;" in html or f"&amp;lt;script&gt;{tag}&amp;lt;/script&gt;" in html
        assert f"<script>{tag}" not in html


# -- code spans and fences sized to their content ------------------------------------------------------------------
def test_the_plan_doc_code_span_outlasts_its_backticks(docs):
    tokens = blocks(docs["after"])
    spans = [c.content for t in tokens if t.type == "inline" for c in t.children or () if c.type == "code_inline"]
    (span,) = [s for s in spans if s.startswith("docs/`a``b`/x")]
    assert "␤plandoc &lt;script>plandoc&lt;/script>" in span  # one line, the whole path, HTML escaped
    assert span.endswith("`` ` \" \\ end")


def test_the_text_graph_fence_outlasts_any_backtick_run(docs):
    for doc in docs.values():
        (tree, chart) = [t for t in blocks(doc) if t.type == "fence"]
        assert tree.markup == "````" and "```" in tree.content
        lines = tree.content.splitlines()
        assert lines[0].startswith("gate-graph <script>gate-graph</script>")  # a code block shows it as is
        assert any("branch-nogo" in line for line in lines)  # every label inside the one fence
        assert chart.content.startswith("flowchart TD\n")


MERMAID_NODE = re.compile(r'    [lf]x?_\w+(\["[^"`<>|\n]*"\]|\(\["[^"`<>|\n]*"\]\))')
MERMAID_EDGE = re.compile(r'    [lf]x?_\w+ -\.?->(\|"[^"`<>|\n]*"\|)? [lf]x?_\w+')


def test_mermaid_labels_stay_one_quoted_string(docs):
    for doc in docs.values():
        (chart,) = [t for t in blocks(doc) if t.type == "fence" and t.info == "mermaid"]
        lines = chart.content.splitlines()
        body = [l for l in lines[1:] if not l.startswith(("    classDef ", "    class "))]
        for line in body:
            assert MERMAID_NODE.fullmatch(line) or MERMAID_EDGE.fullmatch(line), line
        gate = next(l for l in body if l.startswith("    l_gate["))
        assert ("gate-graph #60;script#62;gate-graph#60;/script#62; #38;copy; #60;!-- c --#62; a #35; gate-graph-h "
                "#96;#96;#96; #62; gate-graph-q") in gate
        assert "#quot; \\ end" in gate  # the double quote, as an entity code, inside the one string


# -- the writers, one rule at a time -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["a`b", "``x``", "`lead", "trail`", " both ", "x ``` y", "  ", "a\\`b"])
def test_code_spans_hold_their_text(text):
    tokens = MD.parse(f"see {escape.code(text)} here")
    (span,) = [c for c in tokens[1].children if c.type == "code_inline"]
    assert span.content == text


def test_code_span_puts_a_newline_on_show():
    assert escape.code("a\nb") == "`a␤b`"


@pytest.mark.parametrize("line, escaped", [
    ("# h", "\\# h"), ("#h", "\\#h"), ("> q", "\\> q"), ("| a |", "\\| a |"), ("=====", "\\====="),
    ("---", "\\---"), ("* * *", "\\* * *"), ("___", "\\___"), ("- item", "\\- item"), ("+ item", "\\+ item"),
    ("* item", "\\* item"), ("-", "\\-"), ("1. one", "1\\. one"), ("12) twelve", "12\\) twelve"),
    ("```py", "\\```py"), ("~~~", "\\~~~"), ("[ref]: http://x", "\\[ref]: http://x"),
    # what opens no block is left as written
    ("**bold** text", "**bold** text"), ("-5 degrees", "-5 degrees"), ("2.55× faster", "2.55× faster"),
    ("a > b", "a > b"), ("`code` first", "`code` first"), ("<3", "<3"),
])
def test_a_line_never_opens_a_block(line, escaped):
    assert escape._line_start(line) == escaped
    doc = "- " + escape.block(f"first\n{line}", indent="  ")
    kinds = [t.type for t in MD.parse(doc)]
    assert kinds == ["bullet_list_open", "list_item_open", "paragraph_open", "inline", "paragraph_close",
                     "list_item_close", "bullet_list_close"], (line, kinds)


@pytest.mark.parametrize("text, escaped", [
    ("<script>x</script>", "&lt;script>x&lt;/script>"), ("<!-- c -->", "&lt;!-- c -->"), ("<?php", "&lt;?php"),
    ("<http://x>", "&lt;http://x>"), ("&amp; &#169; &#xA9;", "&amp;amp; &amp;#169; &amp;#xA9;"),
    ("a < b > c & d", "a < b > c & d"), ("\\<b>", "&lt;b>"), ("\\\\<b>", "\\\\&lt;b>"), ("`<b>`", "`&lt;b>`"),
])
def test_html_is_escaped_where_it_would_be_markup(text, escaped):
    assert escape.html(text) == escaped
    assert "html" not in " ".join(c.type for t in MD.parse(escaped) for c in t.children or ())


@pytest.mark.parametrize("text, cell", [
    ("a|b", "a\\|b"), ("a\\|b", "a\\\\\\|b"), ("x\ny", "x<br>y"), ("x\r\ny", "x<br>y"), ("<b>|", "&lt;b>\\|"),
    ("ok\x1b[31m", "ok\ufffd[31m"),
])
def test_cells(text, cell):
    assert escape.cell(text) == cell
    table = f"| h | h2 |\n| --- | --- |\n| {cell} | z |\n"
    assert sum(t.type == "td_open" for t in MD.parse(table)) == 2


@pytest.mark.parametrize("text, line", [("C #", "# C \\#"), ("#", "# \\#"), ("a\nb", "# a b"), ("x <i>", "# x &lt;i>")])
def test_headings(text, line):
    assert escape.heading(1, text) == line


def test_fences_outlast_backtick_runs():
    assert escape.fenced(["a"]) == ["```", "a", "```"]
    assert escape.fenced(["````x", "`"], "mermaid") == ["`````mermaid", "````x", "`", "`````"]


# -- the marker ------------------------------------------------------------------------------------------------------
def test_every_export_ends_with_the_marker(docs):
    for doc in docs.values():
        assert doc.endswith("\n\n<!-- optseq export -->\n") and is_export(doc)


@pytest.mark.parametrize("text, ours", [
    ("x\n<!-- optseq export -->\n", True), ("x\n<!-- optseq export 2026-12-05 -->\n\n  \n", True),
    ("<!-- optseq export -->\nmore\n", False), ("x <!-- optseq export -->\n", False), ("", False),
    ("<!-- optseq exported -->", False),
])
def test_is_export(text, ours):
    assert is_export(text) is ours


def test_a_date_cannot_end_the_marker_early():
    assert marker("2026-12-05") == "<!-- optseq export 2026-12-05 -->"
    assert marker("x --> <b>\n") == "<!-- optseq export x - b -->"
    assert is_export(marker("x --> <b>\n"))
