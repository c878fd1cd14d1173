"""Making text safe to write into the doc: table cells, lines, code spans, fences, headings, Mermaid labels."""
from __future__ import annotations

import re

# Every text field the doc writes (plan text and stored text alike) is made safe once, by the writer
# of the place it lands: a table cell, a list item, a paragraph or a heading (a code span inside
# those), a fenced block, or a Mermaid label. Plan text is the doc's own markdown, so its inline
# markup (bold, code spans) stays; what no field may do is open raw HTML or an entity, or change the
# doc's block structure (start a heading, quote, list, table, fence or rule on a line of its own, or
# close a fence).

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



def _plain(text) -> str:
    """str(text) with one kind of newline, and U+FFFD for control characters and lone surrogates."""
    return _UNPRINTABLE.sub("\ufffd", str(text).replace("\r\n", "\n").replace("\r", "\n"))


def one_line(text) -> str:
    """_plain text on one line: newlines and tabs become spaces (labels, headings, code spans)."""
    return re.sub(r"[ \t]*[\n\t][ \t]*", " ", _plain(text))


def html(text: str) -> str:
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
    needs a `<` that html() leaves as none.)
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


def block(text: str, indent: str = "", prose: bool = False) -> str:
    """Text that lands where a line starts (a list item's content, a paragraph), kept to that block.

    Every line is made unable to open a block of its own (see _line_start) and HTML is escaped (see
    html()). Blank lines would end the block, so they go, and so do the lines' own indents;
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
    return html("\n".join(line and indent + line for line in out).removeprefix(indent))


def cell(text) -> str:
    """Text made safe for one markdown table cell: no raw HTML, `|` escaped, newlines as `<br>`."""
    escaped = html(_plain(text))
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
    body = html(one_line(text).strip())
    body = re.sub(r"(^|[ \t])(#+[ \t]*)$", lambda m: m.group(1) + "\\" + m.group(2), body)
    return "#" * level + " " + body


def bullet(text) -> str:
    """A list item; continuation lines of multi-line text stay inside it and open no block of their own."""
    return "- " + block(text, indent="  ")


def mermaid_text(text) -> str:
    """A quoted Mermaid label's text: on one line, with the characters in _MERMAID as entity codes."""
    return "".join(_MERMAID.get(c, c) for c in one_line(text))
