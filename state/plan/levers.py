"""Reading one [[levers]] table: its id and kind, run, gates, rule, criteria gate and prior."""
from __future__ import annotations

from pathlib import Path

from optseq.state.plan.arms import parse_arms
from optseq.state.plan.checks import no_duplicates
from optseq.state.plan.fields import Fields, did_you_mean, show
from optseq.state.plan.gates import Atom, Expr, Gate
from optseq.state.plan.model import (
    CODE_STATUS, DECISION_OUTCOMES, KINDS, MAX_GATE_DEPTH, MAX_PAIRS, MAX_TIMEOUT_S, PAIRED_OUTCOMES,
    RUN_KEYWORDS, Branch, Candidate, CriteriaGate, Criterion, Guard, Lever, Prior, Rule,
)
from optseq.state.plan.runner import parse_resources
from optseq.state.plan.workload import ARMS_RUN, Workload
from optseq.state.plan.volume import LEVER_KEYS, parse_lever_hours


class LeverReader:
    """A [[levers]] table into a Lever, with its gate expression, rule, margin and criteria gate; its fields read, and
    its problems said, by the Fields it is given."""

    def __init__(self, fields: Fields, plan_dir: Path, workload: Workload | None = None, workload_unread: bool = False):
        self.fields = fields
        self.plan_dir = plan_dir
        """The plan file's folder: an arm's cwd is relative to it."""
        self.workload = workload
        """The plan's `[workload]`, read before the levers that change it."""
        self.workload_unread = workload_unread
        """The `[workload]` had a problem (validate's reading): the arms that change it are not read against
        nothing."""

    def lever(self, raw, index: int) -> Lever:
        f = self.fields
        if not isinstance(raw, dict):
            raise f.fail(f"levers[{index}]", f"expected a table, got {show(raw)}")
        lever_id = f.get(raw, "id", f"levers[{index}]", str)
        if not lever_id or not all(c.isalnum() or c in "_-" for c in lever_id):
            raise f.fail(f"levers[{index}].id", f"not a valid id: {lever_id!r} (letters, digits, _ and -)")
        if lever_id == "fact":
            raise f.fail(f"levers[{index}].id", "'fact' is reserved ('fact:NAME' names a fact in gates)")
        if lever_id in RUN_KEYWORDS:
            raise f.fail(f"levers[{index}].id", f"{lever_id!r} is reserved (`--run {'|'.join(RUN_KEYWORDS)}` "
                                                "are keywords, so no lever could be run by that name)")
        if not lever_id[0].isalnum():
            # `--run -v` would read as an option, and a leading _ or - is easy to lose in a shell
            raise f.fail(f"levers[{index}].id", f"not a valid id: {lever_id!r} (must start with a letter or digit)")
        where = f"levers.{lever_id}"
        f.check_keys(raw, {"id", "title", "kind", "plan_doc", "plan_note", "code", "requires", "run",
                           "timeout_s", "rule", "remeasure_when", "status", "graph_label", "criteria",
                           "prior", "configs", "arms", "resources"} | LEVER_KEYS, where)
        kind = f.get(raw, "kind", where, str)
        if kind not in KINDS:
            raise f.fail(f"{where}.kind", f"unknown kind {kind!r}{did_you_mean(kind, KINDS)} "
                                            f"(one of {', '.join(KINDS)})")
        # a command-pair lever's toggle is already in the code it runs: nothing is left to plan or merge
        # (a branch lever's code is its branch: not merged until its commit is in the baseline, which optseq sees)
        branch = isinstance(raw.get("arms"), dict) and "candidate_ref" in raw["arms"]
        code = f.get(raw, "code", where, str, "merged-default-off" if "arms" in raw and not branch else "none")
        if code not in CODE_STATUS:
            raise f.fail(f"{where}.code", f"unknown code status {code!r} (one of {', '.join(CODE_STATUS)})")
        run = f.strings(raw, "run", where)
        if kind == "decision" and "rule" in raw:
            # its run may report criterion results; samples are never judged, so a rule would be ignored
            raise f.fail(f"{where}.rule", "a decision lever is decided by its criteria; it has no rule")
        # the parts below are read on their own: validate says the problems of each (Fields.part)
        criteria = f.part(lambda: self.criteria(raw["criteria"], f"{where}.criteria")) if "criteria" in raw else None
        if kind == "decision" and "criteria" not in raw:
            raise f.fail(f"{where}.criteria", "a decision lever needs its criteria gate")
        if kind != "decision" and "criteria" in raw:
            raise f.fail(f"{where}.criteria", f"only decision levers have criteria (kind is {kind})")
        configs = f.strings(raw, "configs", where)
        if configs and kind != "experiment":
            raise f.fail(f"{where}.configs", f"only experiment levers have configs (kind is {kind})")
        for i, name in enumerate(configs):
            if name in ("decided", "defer"):
                raise f.fail(f"{where}.configs[{i}]", f"{name!r} is reserved; name the config otherwise")
            if name in configs[:i]:
                raise f.fail(f"{where}.configs[{i}]", f"duplicate config {name!r}")
        outcomes: tuple[str, ...]
        if kind == "decision":
            outcomes = DECISION_OUTCOMES
        elif kind == "experiment":
            outcomes = configs + ("defer",)
        else:
            outcomes = PAIRED_OUTCOMES
        rule = f.part(lambda: self.rule(raw["rule"], f"{where}.rule", kind)) if "rule" in raw else None
        arms = None
        # a rule or a workload with a problem is said already: the arms are not read against what is not there
        if "arms" in raw and not ("rule" in raw and rule is None) and not self.workload_unread:
            if run:
                raise f.fail(f"{where}.run", "a command-pair lever's arms are its commands: give run or arms, "
                                             "not both")
            if kind not in ("speedup", "infra"):
                raise f.fail(f"{where}.arms", f"only speedup and infra levers are measured in pairs (kind is "
                                              f"{kind})")
            arms, rule = f.part(lambda: parse_arms(f, raw["arms"], f"{where}.arms", self.plan_dir, rule,
                                                   self.workload), (None, rule))
            run = ARMS_RUN
        prior = f.part(lambda: self.prior(raw, where, kind, outcomes)) if "prior" in raw else None
        plan_doc = f.get(raw, "plan_doc", where, str, None)
        if plan_doc is not None and not plan_doc.strip():
            raise f.fail(f"{where}.plan_doc", "empty path (leave the key out when no plan is written)")
        return Lever(
            id=lever_id,
            title=f.text(raw, "title", where),
            kind=kind,
            index=index,
            plan_doc=plan_doc,
            plan_note=f.text(raw, "plan_note", where, ""),
            code=code,
            code_declared="code" in raw,
            requires=f.part(lambda: self.expr(raw["requires"], f"{where}.requires")) if "requires" in raw else None,
            run=run,
            timeout_s=float(f.at_most(f.positive(raw, "timeout_s", where, (int, float), 900.0),
                                      MAX_TIMEOUT_S, f"{where}.timeout_s", "seconds (7 days)")),
            rule=rule,
            remeasure_when=f.strings(raw, "remeasure_when", where),
            status=f.text(raw, "status", where, ""),
            graph_label=f.text(raw, "graph_label", where, ""),
            criteria=criteria,
            prior=prior,
            outcomes=outcomes,
            arms=arms,
            resources=(f.part(lambda: parse_resources(f, raw["resources"], f"{where}.resources"), ())
                       if "resources" in raw else ()),
            **parse_lever_hours(f, raw, where, kind),
        )

    def prior(self, raw: dict, where: str, kind: str, outcomes: tuple[str, ...]) -> Prior:
        f = self.fields
        p = f.get(raw, "prior", where, dict, what="a table")
        f.check_keys(p, {"outcome", "note", "estimate"}, f"{where}.prior")
        outcome = f.get(p, "outcome", f"{where}.prior", str)
        if outcome not in outcomes:
            raise f.fail(f"{where}.prior.outcome", f"unknown outcome {outcome!r} for a {kind} lever"
                                                   f"{did_you_mean(outcome, outcomes)} "
                                                   f"(one of {', '.join(outcomes)})")
        return Prior(outcome, f.text(p, "note", f"{where}.prior", ""),
                     f.positive(p, "estimate", f"{where}.prior", (int, float), None))

    def expr(self, raw, where: str, depth: int = 0, top: str = "") -> Expr:
        f = self.fields
        top = top or where
        if depth > MAX_GATE_DEPTH:
            raise f.fail(top, f"gates nested more than {MAX_GATE_DEPTH} levels deep")
        if isinstance(raw, str):
            if raw.startswith("fact:"):
                name = raw[5:]
                if not name:
                    raise f.fail(where, f"empty fact name in {raw!r}")
                return Atom(fact=name)
            lever, sep, outcome = raw.partition(":")
            if not sep or not lever or not outcome:
                raise f.fail(where, f"expected 'LEVER:OUTCOME' or 'fact:NAME', got {raw!r}")
            return Atom(lever=lever, outcome=outcome)
        if isinstance(raw, list):
            if not raw:
                raise f.fail(where, "expected a non-empty list (leave requires out for no gate)")
            return Gate("all", tuple(self.expr(item, f"{where}[{i}]", depth + 1, top) for i, item in enumerate(raw)))
        if isinstance(raw, dict):
            if len(raw) != 1 or next(iter(raw)) not in ("all", "any"):
                raise f.fail(where, f"expected {{ all = [...] }} or {{ any = [...] }}, got keys {sorted(raw)}")
            op, items = next(iter(raw.items()))
            if not isinstance(items, list) or not items:
                raise f.fail(f"{where}.{op}", f"expected a non-empty list, got {show(items)}")
            return Gate(op, tuple(self.expr(item, f"{where}.{op}[{i}]", depth + 1, top)
                                  for i, item in enumerate(items)))
        raise f.fail(where, f"expected a gate expression, got {show(raw)}")

    def rule(self, raw, where: str, kind: str) -> Rule:
        f = self.fields
        if not isinstance(raw, dict):
            raise f.fail(where, f"expected a table, got {show(raw)}")
        f.check_keys(raw, {"metric", "min_speedup", "guards", "repeats", "max_repeats", "launches", "max_launches",
                           "pairs_per_launch", "choose", "max_cost_ratio", "cost_metric", "margin"}, where)
        guards = []
        for i, g in enumerate(f.get(raw, "guards", where, list, [], "a list of guard tables")):
            gw = f"{where}.guards[{i}]"
            if not isinstance(g, dict):
                raise f.fail(gw, f"expected a table, got {show(g)}")
            f.check_keys(g, {"name", "max", "min"}, gw)
            guard = Guard(f.get(g, "name", gw, str), f.get(g, "max", gw, (int, float), None),
                          f.get(g, "min", gw, (int, float), None))
            if guard.max is None and guard.min is None:
                raise f.fail(gw, "a guard needs max or min")
            if guard.max is not None and guard.min is not None and guard.min > guard.max:
                raise f.fail(gw, f"min {guard.min} is above max {guard.max}: no run could pass")
            guards.append(guard)
        repeats = f.at_most(f.positive(raw, "repeats", where, int, 5), MAX_PAIRS, f"{where}.repeats", "pairs")
        max_repeats = f.at_most(f.positive(raw, "max_repeats", where, int, max(20, repeats)), MAX_PAIRS,
                                f"{where}.max_repeats", "pairs")
        if max_repeats < repeats:
            raise f.fail(f"{where}.max_repeats", f"{max_repeats} is below repeats ({repeats})")
        launches = f.positive(raw, "launches", where, int, None)
        max_launches = f.at_most(f.positive(raw, "max_launches", where, int, None), max_repeats,
                                 f"{where}.max_launches", "launches (each launch measures a pair at least: "
                                                       "max_repeats)")
        if launches is not None and launches > (max_launches or max_repeats):
            raise f.fail(f"{where}.launches", f"{launches} is above the launch budget "
                                              f"({max_launches or max_repeats}, max_launches or max_repeats)")
        choose = f.get(raw, "choose", where, str, None)
        if choose is not None:
            if kind != "experiment":
                raise f.fail(f"{where}.choose", f"only experiment levers choose a config (kind is {kind})")
            direction, _, metric = choose.partition(":")
            if direction not in ("min", "max") or not metric:
                raise f.fail(f"{where}.choose", f"expected 'min:METRIC' or 'max:METRIC', got {choose!r}")
        return Rule(
            metric=f.get(raw, "metric", where, str),
            min_speedup=float(f.positive(raw, "min_speedup", where, (int, float), 1.0)),
            guards=tuple(guards),
            repeats=repeats,
            max_repeats=max_repeats,
            launches=launches,
            max_launches=max_launches,
            pairs_per_launch=f.at_most(f.positive(raw, "pairs_per_launch", where, int, None), max_repeats,
                                       f"{where}.pairs_per_launch", "pairs (max_repeats)"),
            choose=choose,
            max_cost_ratio=f.positive(raw, "max_cost_ratio", where, (int, float), None),
            cost_metric=f.get(raw, "cost_metric", where, str, None),
            margin=self.margin(raw, where, kind),
        )

    def margin(self, raw: dict, where: str, kind: str) -> float | None:
        f = self.fields
        value = f.get(raw, "margin", where, (int, float), None)
        if value is None:
            return None
        if kind != "experiment":
            raise f.fail(f"{where}.margin", f"only experiment levers have a margin (kind is {kind})")
        if not 0 <= value < 1:
            raise f.fail(f"{where}.margin", f"expected a fraction in [0, 1) (0.05 = 5%), got {show(value)}")
        return float(value)

    def criteria(self, raw, where: str) -> CriteriaGate:
        f = self.fields
        if not isinstance(raw, dict):
            raise f.fail(where, f"expected a table, got {show(raw)}")
        f.check_keys(raw, {"criteria", "candidates", "branches"}, where)
        crits = []
        for i, c in enumerate(f.get(raw, "criteria", where, list, what="a list of criterion tables")):
            cw = f"{where}.criteria[{i}]"
            if not isinstance(c, dict):
                raise f.fail(cw, f"expected a table, got {show(c)}")
            f.check_keys(c, {"id", "title"}, cw)
            crits.append(Criterion(f.get(c, "id", cw, str), f.text(c, "title", cw, "")))
        no_duplicates(f, [c.id for c in crits], f"{where}.criteria", "criterion")
        crit_ids = {c.id for c in crits}
        cands = []
        for i, c in enumerate(f.get(raw, "candidates", where, list, what="a list of candidate tables")):
            cw = f"{where}.candidates[{i}]"
            if not isinstance(c, dict):
                raise f.fail(cw, f"expected a table, got {show(c)}")
            f.check_keys(c, {"id", "title", "results", "verdict", "evidence"}, cw)
            results = f.get(c, "results", cw, dict, {}, "a table criterion = pass|fail")
            for crit, outcome in results.items():
                if crit not in crit_ids:
                    raise f.fail(f"{cw}.results.{crit}", "unknown criterion")
                if outcome not in ("pass", "fail"):
                    raise f.fail(f"{cw}.results.{crit}", f"expected 'pass' or 'fail', got {show(outcome)}")
            verdict = f.get(c, "verdict", cw, str, None)
            if verdict not in (None, "fail"):
                raise f.fail(f"{cw}.verdict", f"only 'fail' can be given, got {verdict!r}")
            cands.append(Candidate(f.get(c, "id", cw, str), f.text(c, "title", cw, ""),
                                   dict(results), verdict, f.text(c, "evidence", cw, "")))
        if not crits or not cands:
            raise f.fail(where, "a criteria gate needs at least one criterion and one candidate")
        no_duplicates(f, [c.id for c in cands], f"{where}.candidates", "candidate")
        branches = []
        for outcome, b in f.get(raw, "branches", where, dict, {}, "a table GO/NO-GO").items():
            bw = f"{where}.branches.{outcome}"
            if outcome not in DECISION_OUTCOMES:
                raise f.fail(bw, f"unknown outcome (one of {', '.join(DECISION_OUTCOMES)})")
            if not isinstance(b, dict):
                raise f.fail(bw, f"expected a table, got {show(b)}")
            f.check_keys(b, {"label", "opens", "closes"}, bw)
            branches.append(Branch(outcome, f.text(b, "label", bw, outcome),
                                   f.strings(b, "opens", bw), f.strings(b, "closes", bw)))
        return CriteriaGate(tuple(cands), tuple(crits), tuple(branches))
