"""`optseq validate [FILE]`: a plan file read as the other commands read it, and what it holds in one line.

Where they stop at a plan's first problem, validate reads on and says every one, a line each (exit 2); a plan that
loads is checked once more for what would waste runs: a rule whose first look cannot decide (a warning, exit 0).
"""
from __future__ import annotations

import sys
from pathlib import Path
from optseq.state.api import Exit

OUTSIDE_STACK = ("its baseline and candidate are two whole commands: adopted, it cannot join the stack (later "
                 "levers are measured without it); write it as candidate_args or candidate_env on one command")


def run_validate(path: Path) -> int:
    from optseq.state.api import loader as plan

    loaded, problems = plan.problems(path)
    if problems or loaded is None:  # the plan comes back only where it has no problem
        for problem in problems:
            print(f"optseq: {problem}", file=sys.stderr)
        return Exit.BAD_INPUT
    print(f"{path}: ok ({len(loaded.levers)} levers, {len(loaded.facts)} facts, "
          f"{len(loaded.decision_points)} decision points)")
    for lever in loaded.levers:
        if lever.arms is not None and not lever.arms.composes:
            print(f"note: {lever.id}: {OUTSIDE_STACK}")
    for key, warning in unwritten_defaults(path, first_looks(loaded)):
        print(f"optseq: warning: {path}: {key}: {warning}", file=sys.stderr)
    return Exit.OK


def unwritten_defaults(path: Path, found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The warnings as the user wrote the plan: a `repeats` the plan left out is its default, and the warning names
    the table and says so instead of naming a key the file does not have."""
    import tomllib

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):  # it loaded a moment ago: say it as it comes
        return found
    levers = {lever.get("id"): lever for lever in raw.get("levers", ()) if isinstance(lever, dict)}
    said = []
    for key, why in found:
        table, _, name = key.rpartition(".")
        if name == "repeats" and "repeats" not in _table(raw, levers, table):
            pairs, _, rest = why.partition(" pairs cannot decide at the first look")
            need = rest.rpartition("repeats = ")[2].split(" ")[0]
            why = (f"repeats is not written, and its default of {pairs} pairs cannot decide at the first look"
                   f"{rest.rpartition('; repeats = ')[0]}; write repeats = {need} to decide at the first")
            key = table
        said.append((key, why))
    return said


def _table(raw: dict, levers: dict, table: str) -> dict:
    """The raw TOML table `levers.ID.rule` or `compare` names."""
    if table.startswith("levers.") and table.endswith(".rule"):
        found = levers.get(table[len("levers."):-len(".rule")], {}).get("rule", {})
    else:
        found = raw.get(table, {})
    return found if isinstance(found, dict) else {}


def first_looks(loaded) -> list[tuple[str, str]]:
    """(key, why) for each rule whose first look cannot decide: the levers' and the commit gate's."""
    from optseq.state.api import commit_gate
    from optseq.state.api import first_look, replicate_of

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
