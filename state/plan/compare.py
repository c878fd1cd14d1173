"""The plan's `[compare]`: what `optseq compare BASE HEAD` holds HEAD to, unless its command line says otherwise.

```toml
[compare]
tolerance = "3%"      # HEAD may be this much slower than BASE and pass (or 0.03)
repeats = 10          # pairs of arm runs the first pass measures
max_repeats = 160     # pairs it may extend to before it says inconclusive
timeout_s = 3600      # the whole compare, every pass together
```
"""
from __future__ import annotations

import math
import re

import msgspec

KEYS = {"tolerance", "repeats", "max_repeats", "timeout_s"}
MAX_TOLERANCE = 0.5
"""A gate that lets HEAD take 1.5 times BASE's time or more guards nothing (`100%` passed HEAD at twice BASE's time);
a typo (`--tolerance 30` meant as 30%) is refused."""
FORMS = "a fraction such as 0.03 or a percentage such as 3%"


class CompareSettings(msgspec.Struct, frozen=True):
    tolerance: float | None = None
    """A fraction (0.03 = 3%); None = the gate's default."""
    repeats: int | None = None
    max_repeats: int | None = None
    timeout_s: float | None = None


class ToleranceError(ValueError):
    """A tolerance that is not a fraction in (0, 1]; str() is the one line shown."""


def parse_tolerance(text: str | float | int) -> float:
    """`3%`, `0.03` -> 0.03. A bare number of 1 or more is refused (30 is not 30%: say `30%`), and so is a space
    inside (`3 %`: the README's forms are the only ones, and a shell splits `--tolerance 3 %` in two)."""
    if isinstance(text, bool):
        raise ToleranceError(f"tolerance {text!r}: expected {FORMS}")
    if isinstance(text, (int, float)):
        value, shown = float(text), repr(text)
        if value >= 1:
            raise ToleranceError(f"tolerance {shown}: a bare number is a fraction (0.03 = 3%); write \"{text}%\" "
                                 f"for a percentage")
    else:
        shown = repr(text)
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(%?)", text)
        if not match:
            squeezed = "".join(text.split())
            spaced = squeezed != text and re.fullmatch(r"[0-9.]+%?", squeezed)
            hint = f" (write {squeezed!r}, no space)" if spaced else ""
            raise ToleranceError(f"tolerance {shown}: expected {FORMS}{hint}")
        value = float(match.group(1)) / (100.0 if match.group(2) else 1.0)
        if not match.group(2) and value >= 1:
            raise ToleranceError(f"tolerance {shown}: a bare number is a fraction (0.03 = 3%); write {text}% "
                                 f"for a percentage")
    if not math.isfinite(value) or not 0 < value <= MAX_TOLERANCE:
        raise ToleranceError(f"tolerance {shown}: expected more than 0% and at most {MAX_TOLERANCE:.0%} (a larger "
                             f"one lets HEAD take more than {1 + MAX_TOLERANCE:g}× BASE's time and pass: no gate)")
    return value
