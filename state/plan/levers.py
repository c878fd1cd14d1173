"""Reading one [[levers]] table: its id and kind, run, gates, rule, criteria gate and prior."""
from __future__ import annotations

from optseq.state.plan.arms import parse_arms
from optseq.state.plan.checks import no_duplicates
from optseq.state.plan.fields import FieldReader, did_you_mean, show
from optseq.state.plan.gates import Atom, Expr, Gate
from optseq.state.plan.model import (
    CODE_STATUS, DECISION_OUTCOMES, KINDS, MAX_GATE_DEPTH, MAX_PAIRS, MAX_TIMEOUT_S, PAIRED_OUTCOMES,
    RUN_KEYWORDS, Branch, Candidate, CriteriaGate, Criterion, Guard, Lever, Prior, Rule,
)
from optseq.state.plan.runner import parse_resources
from optseq.state.plan.workload import ARMS_RUN
from optseq.state.plan.volume import LEVER_KEYS, parse_lever_hours


class LeverReader(FieldReader):
    """A [[levers]] table into a Lever, with its gate expression, rule, margin and criteria gate."""

    workload = None
    """The plan's `[workload]` (state/plan/workload.Workload), read before the levers that change it."""
    workload_unread = False
    """The `[workload]` had a problem (validate's reading): the arms that change it are not read against nothing."""

    def lever(self, raw, index: int) -> Lever:
        if not isinstance(raw, dict):
            raise self.fail(f"levers[{index}]", f"expected a table, got {show(raw)}")
        lever_id = self.get(raw, "id", f"levers[{index}]", str)
        if not lever_id or not all(c.isalnum() or c in "_-" for c in lever_id):
            raise self.fail(f"levers[{index}].id", f"not a valid id: {lever_id!r} (letters, digits, _ and -)")
        if lever_id == "fact":
            raise self.fail(f"levers[{index}].id", "'fact' is reserved ('fact:NAME' names a fact in gates)")
        if lever_id in RUN_KEYWORDS:
            raise self.fail(f"levers[{index}].id", f"{lever_id!r} is reserved (`--run {'|'.join(RUN_KEYWORDS)}` "
                                                   "are keywords, so no lever could be run by that name)")
        if not lever_id[0].isalnum():
            # `--run -v` would read as an option, and a leading _ or - is easy to lose in a shell
            raise self.fail(f"levers[{index}].id", f"not a valid id: {lever_id!r} (must start with a letter or digit)")
        where = f"levers.{lever_id}"
        self.check_keys(raw, {"id", "title", "kind", "plan_doc", "plan_note", "code", "requires", "run",
                              "timeout_s", "rule", "remeasure_when", "status", "graph_label", "criteria",
                              "prior", "configs", "arms", "resources"} | LEVER_KEYS, where)
        kind = self.get(raw, "kind", where, str)
        if kind not in KINDS:
            raise self.fail(f"{where}.kind", f"unknown kind {kind!r}{did_you_mean(kind, KINDS)} "
                                               f"(one of {', '.join(KINDS)})")
        # a command-pair lever's toggle is already in the code it runs: nothing is left to plan or merge
        # (a branch lever's code is its branch: not merged until its commit is in the baseline, which optseq sees)
        branch = isinstance(raw.get("arms"), dict) and "candidate_ref" in raw["arms"]
        code = self.get(raw, "code", where, str, "merged-default-off" if "arms" in raw and not branch else "none")
        if code not in CODE_STATUS:
            raise self.fail(f"{where}.code", f"unknown code status {code!r} (one of {', '.join(CODE_STATUS)})")
        run = self.strings(raw, "run", where)
        if kind == "decision" and "rule" in raw:
            # its run may report criterion results; samples are never judged, so a rule would be ignored
            raise self.fail(f"{where}.rule", "a decision lever is decided by its criteria; it has no rule")
        # the parts below are read on their own: validate says the problems of each (self.part)
        criteria = self.part(lambda: self.criteria(raw["criteria"], f"{where}.criteria")) if "criteria" in raw else None
        if kind == "decision" and "criteria" not in raw:
            raise self.fail(f"{where}.criteria", "a decision lever needs its criteria gate")
        if kind != "decision" and "criteria" in raw:
            raise self.fail(f"{where}.criteria", f"only decision levers have criteria (kind is {kind})")
        configs = self.strings(raw, "configs", where)
        if configs and kind != "experiment":
            raise self.fail(f"{where}.configs", f"only experiment levers have configs (kind is {kind})")
        for i, name in enumerate(configs):
            if name in ("decided", "defer"):
                raise self.fail(f"{where}.configs[{i}]", f"{name!r} is reserved; name the config otherwise")
            if name in configs[:i]:
                raise self.fail(f"{where}.configs[{i}]", f"duplicate config {name!r}")
        outcomes: tuple[str, ...]
        if kind == "decision":
            outcomes = DECISION_OUTCOMES
        elif kind == "experiment":
            outcomes = configs + ("defer",)
        else:
            outcomes = PAIRED_OUTCOMES
        rule = self.part(lambda: self.rule(raw["rule"], f"{where}.rule", kind)) if "rule" in raw else None
        arms = None
        # a rule or a workload with a problem is said already: the arms are not read against what is not there
        if "arms" in raw and not ("rule" in raw and rule is None) and not self.workload_unread:
            if run:
                raise self.fail(f"{where}.run", "a command-pair lever's arms are its commands: give run or arms, "
                                                "not both")
            if kind not in ("speedup", "infra"):
                raise self.fail(f"{where}.arms", f"only speedup and infra levers are measured in pairs (kind is "
                                                 f"{kind})")
            arms, rule = self.part(lambda: parse_arms(self, raw["arms"], f"{where}.arms", self.path.parent, rule,
                                                      self.workload), (None, rule))
            run = ARMS_RUN
        prior = self.part(lambda: self.prior(raw, where, kind, outcomes)) if "prior" in raw else None
        plan_doc = self.get(raw, "plan_doc", where, str, None)
        if plan_doc is not None and not plan_doc.strip():
            raise self.fail(f"{where}.plan_doc", "empty path (leave the key out when no plan is written)")
        return Lever(
            id=lever_id,
            title=self.text(raw, "title", where),
            kind=kind,
            index=index,
            plan_doc=plan_doc,
            plan_note=self.text(raw, "plan_note", where, ""),
            code=code,
            code_declared="code" in raw,
            requires=self.part(lambda: self.expr(raw["requires"], f"{where}.requires")) if "requires" in raw else None,
            run=run,
            timeout_s=float(self.at_most(self.positive(raw, "timeout_s", where, (int, float), 900.0),
                                         MAX_TIMEOUT_S, f"{where}.timeout_s", "seconds (7 days)")),
            rule=rule,
            remeasure_when=self.strings(raw, "remeasure_when", where),
            status=self.text(raw, "status", where, ""),
            graph_label=self.text(raw, "graph_label", where, ""),
            criteria=criteria,
            prior=prior,
            outcomes=outcomes,
            arms=arms,
            resources=(self.part(lambda: parse_resources(self, raw["resources"], f"{where}.resources"), ())
                       if "resources" in raw else ()),
            **parse_lever_hours(self, raw, where, kind),
        )

    def prior(self, raw: dict, where: str, kind: str, outcomes: tuple[str, ...]) -> Prior:
        p = self.get(raw, "prior", where, dict, what="a table")
        self.check_keys(p, {"outcome", "note", "estimate"}, f"{where}.prior")
        outcome = self.get(p, "outcome", f"{where}.prior", str)
        if outcome not in outcomes:
            raise self.fail(f"{where}.prior.outcome", f"unknown outcome {outcome!r} for a {kind} lever"
                                                      f"{did_you_mean(outcome, outcomes)} "
                                                      f"(one of {', '.join(outcomes)})")
        return Prior(outcome, self.text(p, "note", f"{where}.prior", ""),
                     self.positive(p, "estimate", f"{where}.prior", (int, float), None))

    def expr(self, raw, where: str, depth: int = 0, top: str = "") -> Expr:
        top = top or where
        if depth > MAX_GATE_DEPTH:
            raise self.fail(top, f"gates nested more than {MAX_GATE_DEPTH} levels deep")
        if isinstance(raw, str):
            if raw.startswith("fact:"):
                name = raw[5:]
                if not name:
                    raise self.fail(where, f"empty fact name in {raw!r}")
                return Atom(fact=name)
            lever, sep, outcome = raw.partition(":")
            if not sep or not lever or not outcome:
                raise self.fail(where, f"expected 'LEVER:OUTCOME' or 'fact:NAME', got {raw!r}")
            return Atom(lever=lever, outcome=outcome)
        if isinstance(raw, list):
            if not raw:
                raise self.fail(where, "expected a non-empty list (leave requires out for no gate)")
            return Gate("all", tuple(self.expr(item, f"{where}[{i}]", depth + 1, top) for i, item in enumerate(raw)))
        if isinstance(raw, dict):
            if len(raw) != 1 or next(iter(raw)) not in ("all", "any"):
                raise self.fail(where, f"expected {{ all = [...] }} or {{ any = [...] }}, got keys {sorted(raw)}")
            op, items = next(iter(raw.items()))
            if not isinstance(items, list) or not items:
                raise self.fail(f"{where}.{op}", f"expected a non-empty list, got {show(items)}")
            return Gate(op, tuple(self.expr(item, f"{where}.{op}[{i}]", depth + 1, top)
                                  for i, item in enumerate(items)))
        raise self.fail(where, f"expected a gate expression, got {show(raw)}")

    def rule(self, raw, where: str, kind: str) -> Rule:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {show(raw)}")
        self.check_keys(raw, {"metric", "min_speedup", "guards", "repeats", "max_repeats", "launches", "max_launches",
                              "pairs_per_launch", "choose", "max_cost_ratio", "cost_metric", "margin"}, where)
        guards = []
        for i, g in enumerate(self.get(raw, "guards", where, list, [], "a list of guard tables")):
            gw = f"{where}.guards[{i}]"
            if not isinstance(g, dict):
                raise self.fail(gw, f"expected a table, got {show(g)}")
            self.check_keys(g, {"name", "max", "min"}, gw)
            guard = Guard(self.get(g, "name", gw, str), self.get(g, "max", gw, (int, float), None),
                          self.get(g, "min", gw, (int, float), None))
            if guard.max is None and guard.min is None:
                raise self.fail(gw, "a guard needs max or min")
            if guard.max is not None and guard.min is not None and guard.min > guard.max:
                raise self.fail(gw, f"min {guard.min} is above max {guard.max}: no run could pass")
            guards.append(guard)
        repeats = self.at_most(self.positive(raw, "repeats", where, int, 5), MAX_PAIRS, f"{where}.repeats", "pairs")
        max_repeats = self.at_most(self.positive(raw, "max_repeats", where, int, max(20, repeats)), MAX_PAIRS,
                                   f"{where}.max_repeats", "pairs")
        if max_repeats < repeats:
            raise self.fail(f"{where}.max_repeats", f"{max_repeats} is below repeats ({repeats})")
        launches = self.positive(raw, "launches", where, int, None)
        max_launches = self.at_most(self.positive(raw, "max_launches", where, int, None), max_repeats,
                                    f"{where}.max_launches", "launches (each launch measures a pair at least: "
                                                             "max_repeats)")
        if launches is not None and launches > (max_launches or max_repeats):
            raise self.fail(f"{where}.launches", f"{launches} is above the launch budget "
                                                 f"({max_launches or max_repeats}, max_launches or max_repeats)")
        choose = self.get(raw, "choose", where, str, None)
        if choose is not None:
            if kind != "experiment":
                raise self.fail(f"{where}.choose", f"only experiment levers choose a config (kind is {kind})")
            direction, _, metric = choose.partition(":")
            if direction not in ("min", "max") or not metric:
                raise self.fail(f"{where}.choose", f"expected 'min:METRIC' or 'max:METRIC', got {choose!r}")
        return Rule(
            metric=self.get(raw, "metric", where, str),
            min_speedup=float(self.positive(raw, "min_speedup", where, (int, float), 1.0)),
            guards=tuple(guards),
            repeats=repeats,
            max_repeats=max_repeats,
            launches=launches,
            max_launches=max_launches,
            pairs_per_launch=self.at_most(self.positive(raw, "pairs_per_launch", where, int, None), max_repeats,
                                          f"{where}.pairs_per_launch", "pairs (max_repeats)"),
            choose=choose,
            max_cost_ratio=self.positive(raw, "max_cost_ratio", where, (int, float), None),
            cost_metric=self.get(raw, "cost_metric", where, str, None),
            margin=self.margin(raw, where, kind),
        )

    def margin(self, raw: dict, where: str, kind: str) -> float | None:
        value = self.get(raw, "margin", where, (int, float), None)
        if value is None:
            return None
        if kind != "experiment":
            raise self.fail(f"{where}.margin", f"only experiment levers have a margin (kind is {kind})")
        if not 0 <= value < 1:
            raise self.fail(f"{where}.margin", f"expected a fraction in [0, 1) (0.05 = 5%), got {show(value)}")
        return float(value)

    def criteria(self, raw, where: str) -> CriteriaGate:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {show(raw)}")
        self.check_keys(raw, {"criteria", "candidates", "branches"}, where)
        crits = []
        for i, c in enumerate(self.get(raw, "criteria", where, list, what="a list of criterion tables")):
            cw = f"{where}.criteria[{i}]"
            if not isinstance(c, dict):
                raise self.fail(cw, f"expected a table, got {show(c)}")
            self.check_keys(c, {"id", "title"}, cw)
            crits.append(Criterion(self.get(c, "id", cw, str), self.text(c, "title", cw, "")))
        no_duplicates(self, [c.id for c in crits], f"{where}.criteria", "criterion")
        crit_ids = {c.id for c in crits}
        cands = []
        for i, c in enumerate(self.get(raw, "candidates", where, list, what="a list of candidate tables")):
            cw = f"{where}.candidates[{i}]"
            if not isinstance(c, dict):
                raise self.fail(cw, f"expected a table, got {show(c)}")
            self.check_keys(c, {"id", "title", "results", "verdict", "evidence"}, cw)
            results = self.get(c, "results", cw, dict, {}, "a table criterion = pass|fail")
            for crit, outcome in results.items():
                if crit not in crit_ids:
                    raise self.fail(f"{cw}.results.{crit}", "unknown criterion")
                if outcome not in ("pass", "fail"):
                    raise self.fail(f"{cw}.results.{crit}", f"expected 'pass' or 'fail', got {show(outcome)}")
            verdict = self.get(c, "verdict", cw, str, None)
            if verdict not in (None, "fail"):
                raise self.fail(f"{cw}.verdict", f"only 'fail' can be given, got {verdict!r}")
            cands.append(Candidate(self.get(c, "id", cw, str), self.text(c, "title", cw, ""),
                                   dict(results), verdict, self.text(c, "evidence", cw, "")))
        if not crits or not cands:
            raise self.fail(where, "a criteria gate needs at least one criterion and one candidate")
        no_duplicates(self, [c.id for c in cands], f"{where}.candidates", "candidate")
        branches = []
        for outcome, b in self.get(raw, "branches", where, dict, {}, "a table GO/NO-GO").items():
            bw = f"{where}.branches.{outcome}"
            if outcome not in DECISION_OUTCOMES:
                raise self.fail(bw, f"unknown outcome (one of {', '.join(DECISION_OUTCOMES)})")
            if not isinstance(b, dict):
                raise self.fail(bw, f"expected a table, got {show(b)}")
            self.check_keys(b, {"label", "opens", "closes"}, bw)
            branches.append(Branch(outcome, self.text(b, "label", bw, outcome),
                                   self.strings(b, "opens", bw), self.strings(b, "closes", bw)))
        return CriteriaGate(tuple(cands), tuple(crits), tuple(branches))
