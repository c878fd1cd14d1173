"""A rule's conclusion said without the figures it starts with, for a line that prints those figures itself (`--run`'s
summary line, a compare's verdict line): made again from the verdict's said (its sentence's key and fields, kept on
the record), never cut out of the message it was written into."""
from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optseq.state.api import RuleVerdict

FIGURES = "{speed}: "
"""How a rule's sentence starts when it has figures (runs/words: `{speed}: 95% lower bound clears {need} …`)."""


@cache
def _headless() -> dict[str, dict[str, str]]:
    """The rule's sentences as runs/words has them, each that starts with its figures without them."""
    from optseq.state.api import RUN_WORDS

    return {lang: {key: sentence.removeprefix(FIGURES) for key, sentence in table.items()}
            for lang, table in RUN_WORDS.items()}


def conclusion(verdict: RuleVerdict) -> str | None:
    """`95% lower bound clears 1.50× (12 of 16 pairs above, 12 needed); guards hold` for a verdict (a record's
    summary.verdict) whose said was kept; None where it kept none (a reason written otherwise: the caller says the
    reason whole)."""
    said = verdict.said
    if said is None or not isinstance(said.get("key"), str):
        return None
    from optseq.state.api import said_text

    try:
        return said_text(said, "en", _headless())
    except (KeyError, IndexError, ValueError):  # a said of another release's fields: the reason stands whole
        return None
