"""The plan's TOML form: parsing and validation into optseq.state.plan.model's typed classes."""
from __future__ import annotations

import datetime as dt
import math
import tomllib
from pathlib import Path

from optseq.state.plan.gates import Atom, Expr, Gate, atoms
from optseq.state.plan.model import (
    CODE_STATUS, DECISION_OUTCOMES, KINDS, LANGS, MARKS, MAX_GATE_DEPTH, MAX_LEVERS, MAX_PAIRS, MAX_PLAN_BYTES, MAX_TIMEOUT_S, PAIRED_OUTCOMES, RUN_KEYWORDS, TRIGGERS, Branch, Candidate, CriteriaGate, Criterion, DecisionPoint, Fact, Guard, Lever, OrderItem, Plan, PlanError, Prior, Rule, StatusItem, dependencies, ARMS_RUN,
)
from optseq.state.plan.arms import parse_arms
from optseq.state.plan.runner import parse_resources, parse_runner
from optseq.state.plan.volume import LEVER_KEYS, check_volume, parse_lever_hours, parse_volume


def load(path: Path | str) -> Plan:
    """Read and validate a plan; raises PlanError with one line naming file, key and problem."""
    return parse(Path(path))


def parse(path: Path) -> Plan:
    try:
        with open(path, "rb") as f:
            # a bounded read: `validate /dev/zero` or a mistyped path to a huge file must not eat memory
            raw = f.read(MAX_PLAN_BYTES + 1)
    except FileNotFoundError:
        raise PlanError(path, "", "no such plan file") from None
    except OSError as exc:
        raise PlanError(path, "", f"cannot read ({exc.strerror})") from None
    if len(raw) > MAX_PLAN_BYTES:
        raise PlanError(path, "", f"larger than {MAX_PLAN_BYTES // 1024 ** 2} MiB: not a plan")
    try:
        data = tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise PlanError(path, "", "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(path, "", f"TOML syntax error: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise PlanError(path, "", "nested too deeply to read (arrays or inline tables hundreds of levels "
                                  "inside one another)") from None
    return _Loader(path).plan(data)


class _Loader:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, problem: str) -> PlanError:
        return PlanError(self.path, key, problem)

    # -- typed field access ----------------------------------------------------------
    def get(self, table: dict, key: str, where: str, kind: type | tuple, default=..., what: str = ""):
        if key not in table:
            if default is ...:
                raise self.fail(f"{where}.{key}" if where else key, "missing")
            return default
        value = table[key]
        ok = isinstance(value, kind) and not (kind in (int, float, (int, float)) and isinstance(value, bool))
        if not ok:
            raise self.fail(f"{where}.{key}" if where else key,
                            f"expected {what or _type_name(kind)}, got {_show(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(f"{where}.{key}" if where else key, f"must be a finite number, got {value}")
        # TOML integers are 64-bit; tomllib reads any size, which later overflows float() and time arithmetic
        if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**63:
            raise self.fail(f"{where}.{key}" if where else key,
                            f"integer out of range (TOML integers are 64-bit), got {_show(value)}")
        return value

    def strings(self, table: dict, key: str, where: str) -> tuple[str, ...]:
        items = self.get(table, key, where, list, [], "a list of strings")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.fail(f"{where}.{key}[{i}]", f"expected a string, got {_show(item)}")
        return tuple(items)

    def check_keys(self, table: dict, allowed: set[str], where: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(f"{where}.{key}" if where else key, "unknown key")

    def positive(self, table: dict, key: str, where: str, kind, default):
        value = self.get(table, key, where, kind, default)
        if value is not None and value <= 0:
            raise self.fail(f"{where}.{key}", f"must be positive, got {_show(value)}")
        return value

    def at_most(self, value, limit, key: str, what: str):
        if value is not None and value > limit:
            raise self.fail(key, f"at most {limit:,} {what}, got {_show(value)}")
        return value

    # -- sections -----------------------------------------------------------------------
    def plan(self, data: dict) -> Plan:
        self.check_keys(data, {"plan", "facts", "levers", "order", "status", "decision_points", "runner",
                               "volume"}, "")
        head = self.get(data, "plan", "", dict, what="a [plan] table")
        self.check_keys(head, {"title", "as_of", "lang", "intro", "table"}, "plan")
        as_of = self.get(head, "as_of", "plan", dt.date, what="a date (YYYY-MM-DD)")
        if isinstance(as_of, dt.datetime):
            as_of = as_of.date()
        lang = self.get(head, "lang", "plan", str, "en")
        if lang not in LANGS:
            raise self.fail("plan.lang", f"unknown language {lang!r} (one of {', '.join(LANGS)})")
        facts = self.facts(self.get(data, "facts", "", dict, {}, "a [facts] table"))
        raw_levers = self.get(data, "levers", "", list, what="a list of [[levers]]")
        if not raw_levers:
            raise self.fail("levers", "the plan declares no levers")
        if len(raw_levers) > MAX_LEVERS:
            raise self.fail("levers", f"at most {MAX_LEVERS} levers in one plan, got {len(raw_levers)}")
        levers = tuple(self.lever(raw, i) for i, raw in enumerate(raw_levers))
        seen: set[str] = set()
        for lever in levers:
            if lever.id in seen:
                raise self.fail(f"levers.{lever.id}", "duplicate lever id")
            seen.add(lever.id)
        plan = Plan(
            path=str(self.path),
            title=self.get(head, "title", "plan", str),
            intro=self.get(head, "intro", "plan", str, ""),
            as_of=as_of,
            lang=lang,
            levers=levers,
            facts=facts,
            table=self.strings(head, "table", "plan") if "table" in head else tuple(l.id for l in levers),
            order=tuple(self.order_item(raw, i) for i, raw in enumerate(self.tables(data, "order"))),
            status=tuple(self.status_item(raw, i) for i, raw in enumerate(self.tables(data, "status"))),
            decision_points=tuple(self.decision_point(raw, i)
                                  for i, raw in enumerate(self.tables(data, "decision_points"))),
            runner=parse_runner(self, data["runner"]) if "runner" in data else None,
            volume=parse_volume(self, data["volume"]) if "volume" in data else None,
        )
        self.cross_check(plan)
        check_volume(self, plan)
        return plan

    def tables(self, data: dict, key: str) -> list[dict]:
        items = self.get(data, key, "", list, [], f"a list of [[{key}]] tables")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", f"expected a table, got {_show(item)}")
        return items

    def facts(self, raw: dict) -> tuple[Fact, ...]:
        facts = []
        for name, spec in raw.items():
            where = f"facts.{name}"
            if not isinstance(spec, dict):
                raise self.fail(where, f"expected a table with description/value, got {_show(spec)}")
            self.check_keys(spec, {"description", "value"}, where)
            facts.append(Fact(name, self.get(spec, "description", where, str, ""),
                              self.get(spec, "value", where, bool, False)))
        return tuple(facts)

    def lever(self, raw, index: int) -> Lever:
        if not isinstance(raw, dict):
            raise self.fail(f"levers[{index}]", f"expected a table, got {_show(raw)}")
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
            raise self.fail(f"{where}.kind", f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
        # a command-pair lever's toggle is already in the code it runs: nothing is left to plan or merge
        code = self.get(raw, "code", where, str, "merged-default-off" if "arms" in raw else "none")
        if code not in CODE_STATUS:
            raise self.fail(f"{where}.code", f"unknown code status {code!r} (one of {', '.join(CODE_STATUS)})")
        run = self.strings(raw, "run", where)
        if kind == "decision" and "rule" in raw:
            # its run may report criterion results; samples are never judged, so a rule would be ignored
            raise self.fail(f"{where}.rule", "a decision lever is decided by its criteria; it has no rule")
        criteria = self.criteria(raw["criteria"], f"{where}.criteria") if "criteria" in raw else None
        if kind == "decision" and criteria is None:
            raise self.fail(f"{where}.criteria", "a decision lever needs its criteria gate")
        if kind != "decision" and criteria is not None:
            raise self.fail(f"{where}.criteria", f"only decision levers have criteria (kind is {kind})")
        configs = self.strings(raw, "configs", where)
        if configs and kind != "experiment":
            raise self.fail(f"{where}.configs", f"only experiment levers have configs (kind is {kind})")
        for i, name in enumerate(configs):
            if name in ("decided", "defer"):
                raise self.fail(f"{where}.configs[{i}]", f"{name!r} is reserved; name the config otherwise")
            if name in configs[:i]:
                raise self.fail(f"{where}.configs[{i}]", f"duplicate config {name!r}")
        if kind == "decision":
            outcomes = DECISION_OUTCOMES
        elif kind == "experiment":
            outcomes = configs + ("defer",)
        else:
            outcomes = PAIRED_OUTCOMES
        rule = self.rule(raw["rule"], f"{where}.rule", kind) if "rule" in raw else None
        arms = None
        if "arms" in raw:
            if run:
                raise self.fail(f"{where}.run", "a command-pair lever's arms are its commands: give run or arms, "
                                                "not both")
            if kind not in ("speedup", "infra"):
                raise self.fail(f"{where}.arms", f"only speedup and infra levers are measured in pairs (kind is "
                                                 f"{kind})")
            arms, rule = parse_arms(self, raw["arms"], f"{where}.arms", self.path.parent, rule)
            run = ARMS_RUN
        prior = None
        if "prior" in raw:
            p = self.get(raw, "prior", where, dict, what="a table")
            self.check_keys(p, {"outcome", "note", "estimate"}, f"{where}.prior")
            outcome = self.get(p, "outcome", f"{where}.prior", str)
            if outcome not in outcomes:
                raise self.fail(f"{where}.prior.outcome",
                                f"unknown outcome {outcome!r} for a {kind} lever (one of {', '.join(outcomes)})")
            prior = Prior(outcome, self.get(p, "note", f"{where}.prior", str, ""),
                          self.positive(p, "estimate", f"{where}.prior", (int, float), None))
        plan_doc = self.get(raw, "plan_doc", where, str, None)
        if plan_doc is not None and not plan_doc.strip():
            raise self.fail(f"{where}.plan_doc", "empty path (leave the key out when no plan is written)")
        return Lever(
            id=lever_id,
            title=self.get(raw, "title", where, str),
            kind=kind,
            index=index,
            plan_doc=plan_doc,
            plan_note=self.get(raw, "plan_note", where, str, ""),
            code=code,
            requires=self.expr(raw["requires"], f"{where}.requires") if "requires" in raw else None,
            run=run,
            timeout_s=float(self.at_most(self.positive(raw, "timeout_s", where, (int, float), 900.0),
                                         MAX_TIMEOUT_S, f"{where}.timeout_s", "seconds (7 days)")),
            rule=rule,
            remeasure_when=self.strings(raw, "remeasure_when", where),
            status=self.get(raw, "status", where, str, ""),
            graph_label=self.get(raw, "graph_label", where, str, ""),
            criteria=criteria,
            prior=prior,
            outcomes=outcomes,
            arms=arms,
            resources=parse_resources(self, raw["resources"], f"{where}.resources") if "resources" in raw else (),
            **parse_lever_hours(self, raw, where, kind),
        )

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
                raise self.fail(f"{where}.{op}", f"expected a non-empty list, got {_show(items)}")
            return Gate(op, tuple(self.expr(item, f"{where}.{op}[{i}]", depth + 1, top)
                                  for i, item in enumerate(items)))
        raise self.fail(where, f"expected a gate expression, got {_show(raw)}")

    def rule(self, raw, where: str, kind: str) -> Rule:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {_show(raw)}")
        self.check_keys(raw, {"metric", "min_speedup", "guards", "repeats", "max_repeats", "choose",
                              "max_cost_ratio", "cost_metric", "margin"}, where)
        guards = []
        for i, g in enumerate(self.get(raw, "guards", where, list, [], "a list of guard tables")):
            gw = f"{where}.guards[{i}]"
            if not isinstance(g, dict):
                raise self.fail(gw, f"expected a table, got {_show(g)}")
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
            raise self.fail(f"{where}.margin", f"expected a fraction in [0, 1) (0.05 = 5%), got {_show(value)}")
        return float(value)

    def criteria(self, raw, where: str) -> CriteriaGate:
        if not isinstance(raw, dict):
            raise self.fail(where, f"expected a table, got {_show(raw)}")
        self.check_keys(raw, {"criteria", "candidates", "branches"}, where)
        crits = []
        for i, c in enumerate(self.get(raw, "criteria", where, list, what="a list of criterion tables")):
            cw = f"{where}.criteria[{i}]"
            if not isinstance(c, dict):
                raise self.fail(cw, f"expected a table, got {_show(c)}")
            self.check_keys(c, {"id", "title"}, cw)
            crits.append(Criterion(self.get(c, "id", cw, str), self.get(c, "title", cw, str, "")))
        _no_duplicates(self, [c.id for c in crits], f"{where}.criteria", "criterion")
        crit_ids = {c.id for c in crits}
        cands = []
        for i, c in enumerate(self.get(raw, "candidates", where, list, what="a list of candidate tables")):
            cw = f"{where}.candidates[{i}]"
            if not isinstance(c, dict):
                raise self.fail(cw, f"expected a table, got {_show(c)}")
            self.check_keys(c, {"id", "title", "results", "verdict", "evidence"}, cw)
            results = self.get(c, "results", cw, dict, {}, "a table criterion = pass|fail")
            for crit, outcome in results.items():
                if crit not in crit_ids:
                    raise self.fail(f"{cw}.results.{crit}", "unknown criterion")
                if outcome not in ("pass", "fail"):
                    raise self.fail(f"{cw}.results.{crit}", f"expected 'pass' or 'fail', got {_show(outcome)}")
            verdict = self.get(c, "verdict", cw, str, None)
            if verdict not in (None, "fail"):
                raise self.fail(f"{cw}.verdict", f"only 'fail' can be given, got {verdict!r}")
            cands.append(Candidate(self.get(c, "id", cw, str), self.get(c, "title", cw, str, ""),
                                   dict(results), verdict, self.get(c, "evidence", cw, str, "")))
        if not crits or not cands:
            raise self.fail(where, "a criteria gate needs at least one criterion and one candidate")
        _no_duplicates(self, [c.id for c in cands], f"{where}.candidates", "candidate")
        branches = []
        for outcome, b in self.get(raw, "branches", where, dict, {}, "a table GO/NO-GO").items():
            bw = f"{where}.branches.{outcome}"
            if outcome not in DECISION_OUTCOMES:
                raise self.fail(bw, f"unknown outcome (one of {', '.join(DECISION_OUTCOMES)})")
            if not isinstance(b, dict):
                raise self.fail(bw, f"expected a table, got {_show(b)}")
            self.check_keys(b, {"label", "opens", "closes"}, bw)
            branches.append(Branch(outcome, self.get(b, "label", bw, str, outcome),
                                   self.strings(b, "opens", bw), self.strings(b, "closes", bw)))
        return CriteriaGate(tuple(cands), tuple(crits), tuple(branches))

    def order_item(self, raw: dict, i: int) -> OrderItem:
        where = f"order[{i}]"
        self.check_keys(raw, {"title", "text", "levers"}, where)
        return OrderItem(self.get(raw, "title", where, str), self.get(raw, "text", where, str, ""),
                         self.strings(raw, "levers", where))

    def status_item(self, raw: dict, i: int) -> StatusItem:
        where = f"status[{i}]"
        self.check_keys(raw, {"lever", "text", "about"}, where)
        about = self.get(raw, "about", where, str, "state")
        if about not in MARKS:
            raise self.fail(f"{where}.about", f"expected one of {', '.join(MARKS)}, got {about!r}")
        return StatusItem(self.get(raw, "lever", where, str), self.get(raw, "text", where, str), about)

    def decision_point(self, raw: dict, i: int) -> DecisionPoint:
        where = f"decision_points[{i}]"
        self.check_keys(raw, {"id", "lever", "on", "text", "reopens"}, where)
        on = self.get(raw, "on", where, str)
        if on not in TRIGGERS:
            raise self.fail(f"{where}.on", f"unknown trigger {on!r} (one of {', '.join(TRIGGERS)})")
        return DecisionPoint(self.get(raw, "id", where, str), self.get(raw, "lever", where, str), on,
                             self.get(raw, "text", where, str), self.strings(raw, "reopens", where))

    # -- references across the plan -------------------------------------------------------
    def cross_check(self, plan: Plan) -> None:
        ids = {lever.id for lever in plan.levers}
        fact_ids = {fact.id for fact in plan.facts}

        def known(lever_id: str, key: str) -> None:
            if lever_id not in ids:
                raise self.fail(key, f"unknown lever {lever_id!r}")

        for lever in plan.levers:
            where = f"levers.{lever.id}"
            for atom in atoms(lever.requires):
                if atom.fact:
                    if atom.fact not in fact_ids:
                        raise self.fail(f"{where}.requires", f"unknown fact {atom.fact!r} (declare it under [facts])")
                    continue
                known(atom.lever, f"{where}.requires")
                if atom.lever == lever.id:
                    raise self.fail(f"{where}.requires", "a lever cannot require itself")
                target = plan.lever(atom.lever)
                if atom.outcome != "decided" and atom.outcome not in target.outcomes:
                    raise self.fail(f"{where}.requires",
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
                raise self.fail(f"plan.table[{i}]", f"duplicate row {row!r}")
        for i, item in enumerate(plan.order):
            for lever_id in item.levers:
                known(lever_id, f"order[{i}].levers")
        for i, item in enumerate(plan.status):
            known(item.lever, f"status[{i}].lever")
        _no_duplicates(self, [p.id for p in plan.decision_points], "decision_points", "decision point")
        for i, point in enumerate(plan.decision_points):
            known(point.lever, f"decision_points[{i}].lever")
            for lever_id in point.reopens:
                known(lever_id, f"decision_points[{i}].reopens")
        cycle = _find_cycle(plan)
        if cycle:
            raise self.fail(f"levers.{cycle[0]}.requires", "dependency cycle: " + " -> ".join(cycle))


def _no_duplicates(loader: _Loader, ids: list[str], where: str, what: str) -> None:
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


def _type_name(kind) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "a table", dt.date: "a date"}
    if isinstance(kind, tuple):
        return "a number" if set(kind) == {int, float} else " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _show(value) -> str:
    if isinstance(value, (dt.date, dt.time)):
        return f"{type(value).__name__} {value.isoformat()}"
    text = repr(value)
    kind = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "table"}.get(
        type(value), type(value).__name__)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"
