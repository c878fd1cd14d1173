"""A "did you mean" for a command line's misspelled choice (`optseq statsu`), as the plan's loader gives one for a
misspelled key."""
from __future__ import annotations

import re

from optseq.state.api import did_you_mean

_INVALID = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


def choice_hint(message: str) -> str:
    """` (did you mean 'status'?)` for argparse's `invalid choice: 'statsu' (choose from 'init', ...)`; else empty."""
    found = _INVALID.search(message)
    return did_you_mean(found.group(1), re.findall(r"'([^']*)'", found.group(2))) if found else ""
