"""A branch lever's code in the few columns a table cell or a graph line has: adopted but not merged, merged
(in the code), or its branch moved since its run. The state layer's sentences (`adopted — merge fast (a1b2c3d)
to put it in the stack`) stay whole in the detail pane; at 80 columns the table's why column holds about 20
characters, and a cut sentence lost the commit, the one part worth reading there."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optseq.state.api import LeverStatus

UNMERGED = "unmerged"
"""The table's state and the graph's mark for an adopted branch lever not merged yet: `adopted` alone read as
done, while the lever is not in the stack and the levers that require it wait."""

MOVED = re.compile(r"^(?P<base>the baseline moved: )?(?P<ref>\S+) (?P<how>moved \d+ commits?|was rewritten|"
                   r"no longer names a commit)")
"""What state/code/branch.py moved_said says moved: `same moved 1 commit since run 2 (aea712a → 840d211)`, `fast
was rewritten since run 3 (…)`, `fast no longer names a commit (…)`, after `the baseline moved: ` for the base."""
BRIEF = {"was rewritten": "rewritten", "no longer names a commit": "gone"}
"""The how in a table cell's few columns: `same moved`, `same rewritten`, `same gone`."""


def branch_state(view: LeverStatus) -> str | None:
    """`unmerged`, `landed` or None (not a branch lever, or not adopted)."""
    return view.branch.state if view.branch else None


def unmerged(view: LeverStatus) -> bool:
    """Adopted and not merged, and not stale: an adopted branch that moved before its merge is stale first (its
    numbers no longer stand for the branch), which the state, the mark and the why say instead."""
    return branch_state(view) == UNMERGED and not view.stale


def short(commit) -> str:
    return str(commit)[:7] if commit else ""


def unmerged_note(view: LeverStatus) -> str:
    """`merge fast (bf379ab)`: what to do, beside the state `unmerged` (the table) or the mark (the graph)."""
    branch = view.branch
    assert branch is not None  # an unmerged lever is a branch lever
    commit = f" ({short(branch.commit)})" if branch.commit else ""
    return f"merge {branch.ref}{commit}"


def landed_note(view: LeverStatus) -> str:
    """`in code since 2744101`: the merge that brought the adopted commit in."""
    since = short(view.branch.since if view.branch else None)
    return f"in code since {since}" if since else "in the code"


def moved_note(view: LeverStatus, brief: bool = False) -> str | None:
    """What moved under a stale branch lever: `same moved 1 commit`, `base HEAD moved 4 commits`; `brief`, `same
    moved`. None for a lever that is not a branch lever or is stale for another reason (a gate re-decided),
    whose reason the detail pane says whole."""
    if not view.branch or not view.stale:
        return None
    match = MOVED.match(view.stale_reason or "")
    if match is None:
        return None
    how = BRIEF.get(match["how"], "moved") if brief else match["how"]
    return ("base " if match["base"] else "") + f"{match['ref']} {how}"


def code_note(view: LeverStatus) -> str | None:
    """The why cell or the graph's note of a branch lever: unmerged, landed or moved; None for the rest."""
    if unmerged(view):
        return unmerged_note(view)
    if branch_state(view) == "landed":
        return landed_note(view)
    return moved_note(view)
