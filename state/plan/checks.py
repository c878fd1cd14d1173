"""The plan-wide checks once every section is read: references to levers and facts, duplicate ids and
dependency cycles."""
from __future__ import annotations

from optseq.state.plan.fields import Fields, did_you_mean
from optseq.state.plan.gates import atoms
from optseq.state.plan.model import Plan, dependencies


def cross_check(fields: Fields, plan: Plan) -> None:
    """Each problem is noted and the checks go on (validate's reading), or the first raised."""
    ids = {lever.id for lever in plan.levers}
    fact_ids = {fact.id for fact in plan.facts}

    def known(lever_id: str, key: str) -> bool:
        unread = fields.problems.unread
        if lever_id in unread:  # its table had a problem of its own, already said
            return False
        if lever_id not in ids:
            fields.note(fields.fail(key, f"unknown lever {lever_id!r}{did_you_mean(lever_id, ids | unread)}"))
            return False
        return True

    for lever in plan.levers:
        where = f"levers.{lever.id}"
        for atom in atoms(lever.requires):
            if atom.fact:
                if atom.fact not in fact_ids:
                    fields.note(fields.fail(f"{where}.requires", f"unknown fact {atom.fact!r}"
                                            f"{did_you_mean(atom.fact, fact_ids)} (declare it under [facts])"))
                continue
            if atom.lever == lever.id:
                fields.note(fields.fail(f"{where}.requires", "a lever cannot require itself"))
                continue
            if not known(atom.named, f"{where}.requires"):
                continue
            target = plan.lever(atom.named)
            outcome = atom.outcome or ""
            if outcome != "decided" and outcome not in target.outcomes:
                fields.note(fields.fail(f"{where}.requires",
                                        f"unknown outcome {atom.outcome!r} for {target.id}"
                                        f"{did_you_mean(outcome, ('decided', *target.outcomes))} "
                                        f"(one of decided, {', '.join(target.outcomes)})"))
        for other in lever.remeasure_when:
            known(other, f"{where}.remeasure_when")
        if lever.criteria:
            for branch in lever.criteria.branches:
                for other in branch.opens + branch.closes:
                    known(other, f"{where}.criteria.branches.{branch.outcome}")
    for i, row in enumerate(plan.table):
        known(row, f"plan.table[{i}]")
        if row in plan.table[:i]:
            fields.note(fields.fail(f"plan.table[{i}]", f"duplicate row {row!r}"))
    for i, item in enumerate(plan.order):
        for lever_id in item.levers:
            known(lever_id, f"order[{i}].levers")
    for i, said in enumerate(plan.status):
        known(said.lever, f"status[{i}].lever")
    fields.part(lambda: no_duplicates(fields, [p.id for p in plan.decision_points], "decision_points",
                                      "decision point"))
    for i, point in enumerate(plan.decision_points):
        known(point.lever, f"decision_points[{i}].lever")
        for lever_id in point.reopens:
            known(lever_id, f"decision_points[{i}].reopens")
    cycle = _find_cycle(plan)
    if cycle:
        fields.note(fields.fail(f"levers.{cycle[0]}.requires", "dependency cycle: " + " -> ".join(cycle)))


def no_duplicates(fields: Fields, ids: list[str], where: str, what: str) -> None:
    seen = set()
    for item in ids:
        if item in seen:
            raise fields.fail(where, f"duplicate {what} id {item!r}")
        seen.add(item)


def _find_cycle(plan: Plan) -> list[str] | None:
    # a lever left out of validate's reading (its own table had a problem) is a node with no edges, and one that
    # requires itself is said so already
    deps = {lever.id: [d for d in dependencies(lever) if plan.has_lever(d) and d != lever.id] for lever in plan.levers}
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
