"""The plan-wide checks once every section is read: references to levers and facts, duplicate ids and
dependency cycles."""
from __future__ import annotations

from optseq.state.plan.fields import FieldReader
from optseq.state.plan.gates import atoms
from optseq.state.plan.model import Plan, dependencies


def cross_check(loader: FieldReader, plan: Plan) -> None:
    ids = {lever.id for lever in plan.levers}
    fact_ids = {fact.id for fact in plan.facts}

    def known(lever_id: str, key: str) -> None:
        if lever_id not in ids:
            raise loader.fail(key, f"unknown lever {lever_id!r}")

    for lever in plan.levers:
        where = f"levers.{lever.id}"
        for atom in atoms(lever.requires):
            if atom.fact:
                if atom.fact not in fact_ids:
                    raise loader.fail(f"{where}.requires", f"unknown fact {atom.fact!r} (declare it under [facts])")
                continue
            known(atom.lever, f"{where}.requires")
            if atom.lever == lever.id:
                raise loader.fail(f"{where}.requires", "a lever cannot require itself")
            target = plan.lever(atom.lever)
            if atom.outcome != "decided" and atom.outcome not in target.outcomes:
                raise loader.fail(f"{where}.requires",
                                  f"unknown outcome {atom.outcome!r} for {target.id} "
                                  f"(one of decided, {', '.join(target.outcomes)})")
        for other in lever.remeasure_when:
            known(other, f"{where}.remeasure_when")
        if lever.criteria:
            for branch in lever.criteria.branches:
                for other in branch.opens + branch.closes:
                    known(other, f"{where}.criteria.branches.{branch.outcome}")
    for i, row in enumerate(plan.table):
        known(row, f"plan.table[{i}]")
        if row in plan.table[:i]:
            raise loader.fail(f"plan.table[{i}]", f"duplicate row {row!r}")
    for i, item in enumerate(plan.order):
        for lever_id in item.levers:
            known(lever_id, f"order[{i}].levers")
    for i, item in enumerate(plan.status):
        known(item.lever, f"status[{i}].lever")
    no_duplicates(loader, [p.id for p in plan.decision_points], "decision_points", "decision point")
    for i, point in enumerate(plan.decision_points):
        known(point.lever, f"decision_points[{i}].lever")
        for lever_id in point.reopens:
            known(lever_id, f"decision_points[{i}].reopens")
    cycle = _find_cycle(plan)
    if cycle:
        raise loader.fail(f"levers.{cycle[0]}.requires", "dependency cycle: " + " -> ".join(cycle))


def no_duplicates(loader: FieldReader, ids: list[str], where: str, what: str) -> None:
    seen = set()
    for item in ids:
        if item in seen:
            raise loader.fail(where, f"duplicate {what} id {item!r}")
        seen.add(item)


def _find_cycle(plan: Plan) -> list[str] | None:
    deps = {lever.id: dependencies(lever) for lever in plan.levers}
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        stack.append(node)
        for dep in deps[node]:
            if colour.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in colour:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        colour[node] = 2
        return None

    for lever in plan.levers:
        if lever.id not in colour:
            found = visit(lever.id)
            if found:
                return found
    return None
