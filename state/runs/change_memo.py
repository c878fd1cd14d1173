"""Change points found before, kept in the user's cache (`$XDG_CACHE_HOME/optseq/change-points`, else
`~/.cache/optseq/change-points`): a series seen before is answered from its file.

ruptures brings numpy and scipy.stats with it, about a second of imports, which every export, `runs` and console
paid for each history of six runs or more, seen many times between two runs. The segmentation is a function of
its inputs, so the key is a digest of all of them (with MEMO_VERSION, which changes with the detector); a file
that is missing, unreadable or not a list of split indexes inside the series is no answer, and the series is
segmented again. A cache that cannot be written is no error: it only saves the second.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

MEMO_VERSION = 1
"""Part of every key: raised when the detector (its cost, its search, ruptures' use) changes."""


def folder() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.path.expanduser("~"), ".cache")
                                                 if os.path.expanduser("~") != "~" else None)
    return Path(base) / "optseq" / "change-points" if base else None


def key(*inputs: Any) -> str:
    # repr-exact floats: json writes the shortest repr, which reads back to the same float
    text = json.dumps([MEMO_VERSION, *inputs], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def recall(digest: str, n: int) -> list[int] | None:
    """The split indexes kept for this key, or None (no file, or one that is not an answer for n points)."""
    where = folder()
    if where is None:
        return None
    try:
        found = json.loads((where / f"{digest}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (isinstance(found, list) and all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < n
                                          for i in found) and found == sorted(set(found)))
    return found if ok else None


def keep(digest: str, splits: list[int]) -> None:
    where = folder()
    if where is None:
        return
    tmp = where / f".{digest}.{os.getpid()}.tmp"
    try:
        where.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(splits), encoding="utf-8")
        os.replace(tmp, where / f"{digest}.json")  # whole or not there: a reader never sees half a file
    except OSError:
        tmp.unlink(missing_ok=True)
