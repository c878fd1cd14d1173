"""Text made safe to store and print: every string of a value encodable as UTF-8."""
from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: Any, *, undecoded: bool = False) -> Any:
    """`value` with every string made storable as UTF-8: lone surrogates become U+FFFD.

    A lone surrogate cannot be written as UTF-8, so a store holding one fails mid-write. JSON may
    spell one (`\\ud800`): each becomes one U+FFFD. With `undecoded`, the strings came from bytes by
    surrogateescape (argv, environment, file names: U+DC80..U+DCFF, one per undecodable byte): those
    bytes are decoded again with replacement, one U+FFFD per bad sequence as bytes.decode gives.
    Lists, tuples, and dict keys and values are cleaned recursively; anything else is returned as it
    is, and so is text that is already valid (the same object).
    """
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        if undecoded:
            try:
                return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            except UnicodeEncodeError:  # a surrogate no byte stands for: replaced one by one below
                pass
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {clean_text(k, undecoded=undecoded): clean_text(v, undecoded=undecoded) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clean_text(v, undecoded=undecoded) for v in value)
    return value


_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"                 # CSI: cursor moves, colours, clear screen, alternate screen
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: window title, clipboard (52), hyperlinks
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"                       # any other escape, and a lone ESC
    r"|[\x90\x9d\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"  # their 8-bit forms
    r"|\x9b[0-?]*[ -/]*[@-~]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Text that came from a lever (its output, a fail reason, a progress message), fit for a terminal: escape
    sequences (a title change, a clear screen, the alternate screen, an OSC 52 clipboard write) and every other
    control character are removed; tabs and newlines stay. The run's log file keeps the raw text."""
    if text.isprintable() or _CONTROLS.search(text) is None:  # one scan: every escape starts with a control
        return text
    return _CONTROLS.sub("", _ESCAPES.sub("", text))
