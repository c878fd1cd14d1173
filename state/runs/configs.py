"""What an experiment lever can be decided to: the configs its runs compared (a config name is the bench's, so the
plan lists none unless it fixes them), and what a hand-typed outcome means whatever its case."""
from __future__ import annotations

from collections.abc import Iterable

from optseq.state.lifecycle.run_index import KeptRun


def measured_configs(runs: Iterable[KeptRun]) -> list[str]:
    """The configs an experiment's runs compared, in the order they first appeared: what it can be decided to.
    `runs`: the run index's kept copies."""
    seen: dict[str, None] = {}
    for run in runs:
        figures = run.figures
        for name in ((figures.best_of or {}).get("configs") or figures.arms or {}):
            seen.setdefault(str(name), None)
    return list(seen)


def spelled(outcome: str, allowed) -> str | None:
    """`outcome` as the plan spells it (`go` is GO, `Adopt` adopt), or None when it is none of `allowed`."""
    if outcome in allowed:
        return outcome
    folded = [a for a in allowed if a.casefold() == outcome.casefold()]
    return folded[0] if len(folded) == 1 else None
