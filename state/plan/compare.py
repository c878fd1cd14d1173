"""The plan's `[compare]`: what `optseq compare BASE HEAD` holds HEAD to, unless its command line says otherwise.

```toml
[compare]
min_speedup = 0.97    # the speed HEAD must keep, over BASE's, as a lever's rule writes its bar: 3% slower passes
                      # (tolerance = "3%", or 0.03, is its old spelling, still read)
repeats = 10          # pairs of arm runs the first pass measures
max_repeats = 160     # pairs it may extend to before it says inconclusive
timeout_s = 3600      # the whole compare, every pass together
```
"""
from __future__ import annotations

import math
import re

import msgspec

KEYS = {"tolerance", "min_speedup", "repeats", "max_repeats", "timeout_s"}
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


def tolerance_of_speedup(value: str | float | int) -> float:
    """`min_speedup = 0.97`, the compare's bar as a lever's rule writes one (the speed HEAD must keep, over BASE's:
    the ratio every figure of a compare is said in) -> the tolerance the gate keeps, 1 / 0.97 - 1 (HEAD 3.09% slower
    still passes). ToleranceError outside [1 / (1 + MAX_TOLERANCE), 1)."""
    shown = repr(value)
    ratio = math.nan
    if isinstance(value, str):
        try:
            ratio = float(value.removesuffix("×").removesuffix("x"))
        except ValueError:
            pass
    elif not isinstance(value, bool):
        ratio = float(value)
    lowest = 1 / (1 + MAX_TOLERANCE)
    if not math.isfinite(ratio):
        raise ToleranceError(f"min_speedup {shown}: expected HEAD's speed over BASE's, such as 0.97 (HEAD may be 3% "
                             "slower)")
    if ratio >= 1:
        raise ToleranceError(f"min_speedup {shown}: a compare passes HEAD up to a tolerance slower than BASE: give a "
                             "ratio below 1 (0.97 lets it be 3% slower)")
    if ratio < lowest:
        raise ToleranceError(f"min_speedup {shown}: at least {lowest:.3g} (a lower bar lets HEAD take more than "
                             f"{1 + MAX_TOLERANCE:g}× BASE's time and pass: no gate)")
    return 1 / ratio - 1
