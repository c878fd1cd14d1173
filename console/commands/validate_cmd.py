"""`optseq validate [FILE]`: a plan file read as the other commands read it, and what it holds in one line.

Where they stop at a plan's first problem, validate reads on and says every one, a line each (exit 2).
"""
from __future__ import annotations

import sys
from pathlib import Path

OK = 0
BAD_INPUT = 2
OUTSIDE_STACK = ("its baseline and candidate are two whole commands: adopted, it cannot join the stack (later "
                 "levers are measured without it); write it as candidate_args or candidate_env on one command")


def run_validate(path: Path) -> int:
    from optseq.state.plan import loader as plan

    loaded, problems = plan.problems(path)
    if problems:
        for problem in problems:
            print(f"optseq: {problem}", file=sys.stderr)
        return BAD_INPUT
    print(f"{path}: ok ({len(loaded.levers)} levers, {len(loaded.facts)} facts, "
          f"{len(loaded.decision_points)} decision points)")
    for lever in loaded.levers:
        if lever.arms is not None and not lever.arms.composes:
            print(f"note: {lever.id}: {OUTSIDE_STACK}")
    return OK

