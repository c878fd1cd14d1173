"""`optseq validate [FILE]`: a plan file read as the other commands read it, and what it holds in one line.

Where they stop at a plan's first problem, validate reads on and says every one, a line each (exit 2); a plan that
loads is checked once more for what would waste runs: a rule whose first look cannot decide (a warning, exit 0).
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
    for key, warning in first_looks(loaded):
        print(f"optseq: warning: {path}: {key}: {warning}", file=sys.stderr)
    return OK


def first_looks(loaded) -> list[tuple[str, str]]:
    """(key, why) for each rule whose first look cannot decide: the levers' and the commit gate's."""
    from optseq.state.runs import commit_gate
    from optseq.state.runs.passes import first_look, replicate_of

    found = []
    for lever in loaded.levers:
        if lever.rule is not None and lever.kind != "experiment" and not lever.rule.choose:
            why = first_look(lever.rule, replicate_of(lever))
            if why:
                found.append((f"levers.{lever.id}.rule.{why[0]}", why[1]))
    settings = loaded.compare
    if settings.repeats is not None or settings.max_repeats is not None:
        repeats = settings.repeats or commit_gate.DEFAULT_REPEATS
        gate = commit_gate.rule("time", commit_gate.DEFAULT_TOLERANCE, repeats,
                                settings.max_repeats or commit_gate.DEFAULT_MAX_REPEATS)
        why = first_look(gate, "pair")  # every arm run of a compare is its own process
        if why:
            found.append((f"compare.{why[0]}", why[1]))
    return found
