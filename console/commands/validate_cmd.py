"""`optseq validate [FILE]`: a plan file read as the other commands read it, and what it holds in one line."""
from __future__ import annotations

from pathlib import Path

OK = 0
OUTSIDE_STACK = ("its baseline and candidate are two whole commands: adopted, it cannot join the stack (later "
                 "levers are measured without it); write it as candidate_args or candidate_env on one command")


def run_validate(path: Path) -> int:
    from optseq.state.plan import loader as plan

    loaded = plan.load(path)
    print(f"{path}: ok ({len(loaded.levers)} levers, {len(loaded.facts)} facts, "
          f"{len(loaded.decision_points)} decision points)")
    for lever in loaded.levers:
        if lever.arms is not None and not lever.arms.composes:
            print(f"note: {lever.id}: {OUTSIDE_STACK}")
    return OK
