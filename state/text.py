"""Text made safe to store and print: every string of a value encodable as UTF-8."""
from __future__ import annotations

import functools
import math
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether `clean_text` would change anything of a value whose every string is in `text` (its JSON dump)."""
    return _SURROGATE.search(text) is not None


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


@functools.cache
def _escapes() -> re.Pattern[str]:
    """Compiled at the first text with a control character in it (5M instructions, a tenth of the plan's parse):
    most starts never meet one."""
    return re.compile(
        r"\x1b\[[0-?]*[ -/]*[@-~]"                 # CSI: cursor moves, colours, clear screen, alternate screen
        r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: window title, clipboard (52), hyperlinks
        r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
        r"|\x1b[ -/]*[0-~]?"                       # any other escape, and a lone ESC
        r"|[\x90\x9d\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"  # their 8-bit forms
        r"|\x9b[0-?]*[ -/]*[@-~]?")


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: Any) -> Any:
    """Text that came from a lever (its output, a fail reason, a progress message) or a user (an evidence, a why),
    fit for a terminal: escape sequences (a title change, a clear screen, the alternate screen, an OSC 52 clipboard
    write) and every other control character are removed; tabs and newlines stay. The run's log file and the store
    keep the raw text. Lists, tuples, and dict keys and values are made safe recursively (what the console reads
    from the store, whole); so are a msgspec Struct's fields (what status says: state/view_types.py), a Struct
    whose every field is safe returned as it is; anything else is returned as it is, and so is safe text (the same
    object)."""
    if isinstance(text, dict):
        return {terminal_safe(k): terminal_safe(v) for k, v in text.items()}
    if type(text) in (list, tuple):
        return type(text)(terminal_safe(v) for v in text)
    if hasattr(type(text), "__struct_fields__"):
        return _safe_struct(text)
    if not isinstance(text, str) or text.isprintable() or _CONTROLS.search(text) is None:
        return text  # one scan: every escape starts with a control
    return _CONTROLS.sub("", _escapes().sub("", text))


def _safe_struct(value: Any) -> Any:
    """A frozen Struct with its unsafe fields made safe: a copy where one changed (never a dict), else itself."""
    changed = {}
    for name in value.__struct_fields__:
        field = getattr(value, name)
        safe = terminal_safe(field)
        if safe is not field and safe != field:  # a dict or list is rebuilt: only a changed one is kept
            changed[name] = safe
    if not changed:
        return value
    import msgspec  # the views' Structs are msgspec's: it is loaded already wherever one is made

    return msgspec.structs.replace(value, **changed)


def ratio_text(value: float, decimals: int = 2) -> str:
    """A ratio (a speedup, a slowdown) as a performance engineer reads it at a glance, without the `×`: `decimals`
    places from 0.1 to 10 (`1.42`, `0.97`; 3 where a compare tells 1.011 from 1.000), three significant figures
    beyond (`87.6`, `120`, `0.0333`), and powers of ten past 10,000 or under 0.001 (`4.70e4`, `3.33e-4`). A fixed
    `.2f` said `0.00` of a 3,000× slowdown and `46977.079` of a big gain; one rule for every place a ratio is
    printed (the CLI, the console, the export, a compare's summary)."""
    size = abs(value)
    if value != value or size == float("inf"):
        return str(value)
    if size and (size >= 9999.5 or size < 0.000_999_5):
        mantissa, exponent = f"{value:.2e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    if size >= 99.95:
        return f"{value:.0f}"
    if size >= 9.995:
        return f"{value:.1f}"
    if size >= 0.0995 or size == 0:
        return f"{value:.{decimals}f}"
    places = 2 - math.floor(math.log10(size))  # three significant figures: 0.0333, 0.00333
    return f"{value:.{max(places, decimals)}f}"
