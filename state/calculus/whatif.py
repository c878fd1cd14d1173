"""Hours saved: what each pending lever is expected to save over the planned volume, and which order saves most.

The seed argues "infra 1.3× first: it compounds over every later experiment"; this computes it. For lever i:

    f_i = share_i · (1 − 1/S_i)        the fraction of an iteration it saves once adopted (Amdahl: 1/S_eff = 1 − f)
    a_i = q_i · f_i                    the fraction it is expected to save, q_i its chance of adoption
    V_i = Σ_{work after i} B_e · Π_{j before i} (1 − a_j)     the hours it affects, on the expected stack before it
    H_i = a_i · V_i − C_i              expected hours saved; C_i its runs' hours plus declared effort_h
    V*_i = C_i / a_i                   the break-even volume

so after a first lever S1 a second saves (1 − 1/S2) · V / S1 (q = share = 1). An order's total is
Σ_e B_e (1 − Π_{j before e} (1 − a_j)) − Σ C − the re-runs it forces: an experiment that has run, followed by an
adopted lever in its `rerun_when`, must run once more on the new stack to stay comparable (the seed's argument).
Orders respect the plan's gates; up to EXHAUSTIVE levers every order is tried, beyond that a greedy rule.
Pure: reads the plan and the lever machine (its run index), never the store.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from optseq.state.plan.gates import Atom
from optseq.state.plan.model import KINDS, Plan
from optseq.state.plan.volume import SPEEDUP_KINDS

EXHAUSTIVE = 8
"""Most levers (speed-ups and experiments) whose every order is tried; more use the greedy rule."""
EPS_H = 0.005
"""Hours two orders may differ by and still count as saving the same (what a table shows at two decimals)."""
FORMULA = "H = q · share · (1 − 1/S) · V − C;  V* = C / (q · share · (1 − 1/S))"
DECIDED_SPEEDUP = ("adopted", "rejected")


@dataclass
class LeverFigures:
    """One speed-up lever's inputs (pending, or decided by optseq), and its V and H in the plan's order."""

    id: str
    kind: str
    state: str
    s: float | None = None
    s_source: str = "missing"
    """measured | prior | missing"""
    s_low: float | None = None
    s_high: float | None = None
    n: int | None = None
    q: float | None = None
    q_source: str = "missing"
    """adopted | rejected | measured | prior | missing"""
    share: float = 1.0
    share_source: str = "default"
    effort_h: float = 0.0
    effort_source: str = "default"
    run_h: float = 0.0
    runs_counted: int = 0
    runs_unknown: int = 0
    v_h: float | None = None
    h: float | None = None
    h_low: float | None = None
    h_high: float | None = None
    v_star_h: float | None = None

    @property
    def f(self) -> float | None:
        return None if self.s is None else self.share * (1 - 1 / self.s)

    @property
    def a(self) -> float | None:
        return None if self.f is None or self.q is None else self.q * self.f

    @property
    def cost_h(self) -> float:
        return self.effort_h + self.run_h

    @property
    def straddles_one(self) -> bool:
        return self.s_low is not None and self.s_high is not None and self.s_low < 1 < self.s_high

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out.update(cost_h=self.cost_h, straddles_one=self.straddles_one, f=self.f, a=self.a)
        return out


@dataclass
class Work:
    """A planned experiment in hours: where it runs and which adoptions after it force a re-run."""

    id: str
    lever: str | None
    """Its experiment lever in the order, or None: after every pending lever."""
    run_h: float | None
    """Hours of one run on today's stack; None when the time per iteration is missing."""
    runs: int
    done: int
    """Runs already behind it (its experiment lever is decided): 0 or 1."""
    rerun_when: frozenset[str]

    @property
    def ahead_h(self) -> float:
        return (self.run_h or 0.0) * (self.runs - self.done)


@dataclass
class OrderResult:
    order: tuple[str, ...]
    saved_h: float
    cost_h: float
    reruns: list[dict] = field(default_factory=list)
    """{experiment, lever, hours (None when unknown)} for each re-run the order forces."""
    per_lever: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    """lever -> (V, H) in this order."""

    @property
    def rerun_h(self) -> float:
        return sum(r["hours"] or 0.0 for r in self.reruns)

    @property
    def net_h(self) -> float:
        return self.saved_h - self.cost_h - self.rerun_h

    def to_dict(self) -> dict:
        return {"order": list(self.order), "saved_h": self.saved_h, "cost_h": self.cost_h, "rerun_h": self.rerun_h,
                "net_h": self.net_h, "reruns": self.reruns}


class Calculus:
    def __init__(self, plan: Plan, machine):
        self.plan, self.m = plan, machine
        self.missing: list[str] = []
        """Inputs without which a figure is left out, each with what would supply it."""
        self.assumptions: list[str] = []
        """Numbers that are assumptions or priors, not measurements."""
        self.defaults: list[str] = []
        """Inputs the plan does not declare, and the value counted instead."""
        self.notes: list[str] = []
        self.levers = {lid: self._figures(lid) for lid in self._speedups()}
        self.fixed = sorted((lid for lid, f in self.levers.items() if f.state == "adopted"),
                            key=lambda lid: self.m.models[lid].decision_seq or 0)
        """Levers optseq has adopted: in the stack ahead of every order, in the order they were adopted."""
        if self.fixed and plan.volume and plan.volume.s_per_iter is not None:
            self.assumptions.append(f"adopted since the plan ({', '.join(self.fixed)}): their savings count against "
                                    "the declared s_per_iter, the plan's stack before them")
        self._name_defaults()
        self.s_per_iter, self.s_source = self._s_per_iter()
        self.work = self._work() if plan.volume else []
        if plan.volume is None:
            self.missing.insert(0, "volume: the plan declares no [volume] (planned experiments and s_per_iter): "
                                   "no hours can be weighed")
        self.at_slot: dict[str, float] = {}
        """experiment lever -> the planned hours that run at its place in an order."""
        for w in self.work:
            if w.lever:
                self.at_slot[w.lever] = self.at_slot.get(w.lever, 0.0) + w.ahead_h
        self.tail_h = sum(w.ahead_h for w in self.work if not w.lever)
        """Planned hours after every lever."""
        self.items = [lv.id for lv in plan.levers if self._in_orders(lv)]
        """What an order arranges: pending speed-ups and the pending experiments the volume places."""
        self.priority = self._plan_priority()

    def state(self, lever_id: str) -> str:
        return self.m.models[lever_id].state

    def _in_orders(self, lever) -> bool:
        state = self.state(lever.id)
        if lever.id in self.levers:
            return state not in DECIDED_SPEEDUP
        placed = {w.lever for w in self.work if w.lever}
        return lever.kind == "experiment" and state not in ("decided", "closed") and lever.id in placed

    # -- inputs ----------------------------------------------------------------------------------------
    def _speedups(self) -> list[str]:
        """The speed-up levers the calculus weighs: pending ones, and those optseq decided (their figures are
        measured); not a closed lever, nor one the plan records as decided before optseq kept it."""
        out = []
        for lv in self.plan.levers:
            model = self.m.models[lv.id]
            if lv.kind not in SPEEDUP_KINDS or model.state == "closed":
                continue
            if model.state in DECIDED_SPEEDUP and (model.decision or {}).get("source") == "plan":
                continue
            out.append(lv.id)
        return out

    def _figures(self, lever_id: str) -> LeverFigures:
        lever = self.plan.lever(lever_id)
        fig = LeverFigures(lever_id, lever.kind, self.state(lever_id))
        stats = _stats(self.m.runs.last_stats.get(lever_id))
        if stats is None and isinstance((self.m.models[lever_id].decision or {}).get("stats"), dict):
            stats = self.m.models[lever_id].decision["stats"]
        expect = lever.expect
        if stats and _number(stats.get("estimate")):
            fig.s, fig.s_source, fig.n = float(stats["estimate"]), "measured", stats.get("n")
            fig.s_low, fig.s_high = _number(stats.get("ci_low")), _number(stats.get("ci_high"))
        elif expect and expect.speedup is not None:
            fig.s, fig.s_source = expect.speedup, "prior"
            self.assumptions.append(f"{lever_id}: S {expect.speedup:.2f}× is a prior"
                                    + (f" ({expect.note})" if expect.note else ""))
        elif lever.prior and lever.prior.estimate is not None:
            fig.s, fig.s_source = lever.prior.estimate, "prior"
            self.assumptions.append(f"{lever_id}: S {lever.prior.estimate:.2f}× is the plan's prior")
        ratios = [r for r in (stats or {}).get("ratios") or () if _number(r) is not None]
        if fig.state in DECIDED_SPEEDUP:
            fig.q, fig.q_source = (1.0, "adopted") if fig.state == "adopted" else (0.0, "rejected")
        elif ratios:
            threshold = lever.rule.min_speedup if lever.rule else 1.0
            fig.q, fig.q_source = p_median_at_least(ratios, threshold), "measured"
        elif expect and expect.p_adopt is not None:
            fig.q, fig.q_source = expect.p_adopt, "prior"
            self.assumptions.append(f"{lever_id}: q {expect.p_adopt:.2f} is a prior (expect.p_adopt)")
        lacking = [k for k, v in (("S", fig.s), ("q", fig.q)) if v is None]
        if lacking:
            keys = {"S": "speedup", "q": "p_adopt"}
            declare = "declare expect = { " + ", ".join(keys[k] for k in lacking) + " }"
            self.missing.append(f"{lever_id}: {' and '.join(lacking)}: not measured and no prior ("
                                + (f"optseq --run {lever_id}, or {declare}" if lever.run else declare) + ")")
        if lever.share is not None:
            fig.share, fig.share_source = lever.share, "declared"
        if lever.effort_h is not None:
            fig.effort_h, fig.effort_source = lever.effort_h, "declared"
        gpus = max(1, dict(lever.resources).get("gpus", 0))
        for run in self.m.runs.recent.get(lever_id, ()):
            hours = _run_hours(run)
            if hours is None:
                fig.runs_unknown += 1
            else:
                fig.run_h += hours * gpus
                fig.runs_counted += 1
        if fig.runs_unknown:
            self.missing.append(f"{lever_id}: {fig.runs_unknown} run(s) without start and end times: their hours "
                                "are not in C")
        return fig

    def _name_defaults(self) -> None:
        """What the plan leaves undeclared, one line per input, naming the levers and the value counted."""
        figs = self.levers.values()
        shares = [f.id for f in figs if f.share_source == "default"]
        if shares:
            self.defaults.append(f"share not declared, 1 counted (the whole iteration): {', '.join(shares)}")
        effort = [f for f in figs if f.effort_source == "default"]
        if effort:
            self.defaults.append(f"effort_h not declared, 0 h counted: {', '.join(f.id for f in effort)}")
        free = [f.id for f in effort if not f.runs_counted]
        if free:
            self.defaults.append(f"no run yet either, so C = 0: {', '.join(free)}")

    def _s_per_iter(self) -> tuple[float | None, str]:
        volume = self.plan.volume
        if volume is None:
            return None, "missing"
        if volume.s_per_iter_from:
            lever_id, metric = volume.s_per_iter_from
            measured = self._measured_seconds(lever_id, metric)
            if measured is not None:
                return measured, "measured"
            if volume.s_per_iter is None:
                self.missing.append(f"volume.s_per_iter: not declared, and {lever_id} has no measured {metric} yet")
                return None, "missing"
        if volume.s_per_iter is None:
            if any(e.s_per_iter is None for e in volume.experiments):
                self.missing.append("volume.s_per_iter: not declared (seconds per training iteration)")
            return None, "missing"
        if "s_per_iter" in volume.assumed:
            self.assumptions.append(f"volume.s_per_iter = {volume.s_per_iter:g} s (assumed)")
        return volume.s_per_iter, "declared"

    def _measured_seconds(self, lever_id: str, metric: str) -> float | None:
        """The chosen config's median `metric` in the experiment's latest run that has it (the mean over configs
        while none is chosen), in seconds."""
        for run in reversed(self.m.runs.recent.get(lever_id, [])):
            summary = run.get("summary") if isinstance(run.get("summary"), dict) else {}
            arms = summary.get("arms") if isinstance(summary.get("arms"), dict) else {}
            cells = {name: row[metric] for name, row in arms.items() if isinstance(row, dict)
                     and isinstance(row.get(metric), dict) and _number(row[metric].get("median")) is not None}
            if not cells:
                continue
            chosen = summary.get("chosen")
            picked = [cells[chosen]] if chosen in cells else list(cells.values())
            # measured with levers adopted since the plan: back to the plan's stack, which the volume is counted on
            stack = 1.0
            for other in (run.get("infra") or {}).get("adopted") or ():
                if other in self.fixed and self.levers[other].f is not None:
                    stack *= 1 - self.levers[other].f
            scale = {"s": 1.0, "": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}.get(str(picked[0].get("unit") or ""))
            if scale is None:
                self.missing.append(f"volume.s_per_iter_from: {lever_id}'s {metric} is in "
                                    f"{picked[0].get('unit')!r}, not seconds")
                return None
            return scale * sum(float(c["median"]) for c in picked) / len(picked) / stack
        return None

    def _work(self) -> list[Work]:
        volume = self.plan.volume
        infra = frozenset(lv.id for lv in self.plan.levers if lv.kind == "infra")
        out = []
        for e in volume.experiments:
            if e.assumed:
                self.assumptions.append(f"{e.id}: " + ", ".join(f"{key} {getattr(e, key):g}" for key in e.assumed)
                                        + " (assumed)")
            seconds = e.s_per_iter if e.s_per_iter is not None else self.s_per_iter
            state = self.state(e.lever) if e.lever else None
            if state == "closed":
                self.notes.append(f"{e.id}: {e.lever} is closed: its planned runs count nothing")
                continue
            done = 1 if state == "decided" else 0
            run_h = None if seconds is None else e.configs * e.iterations * seconds / 3600
            out.append(Work(e.id, e.lever if not done else None, run_h, e.runs, done,
                            frozenset(e.rerun_when) if e.rerun_when is not None else infra))
        return out

    def _plan_priority(self) -> dict[str, tuple]:
        """The plan's recommended order: its [[order]] items first, then kind and plan order (as `next`)."""
        listed = [lid for item in self.plan.order for lid in item.levers]
        pos = {lid: i for i, lid in reversed(list(enumerate(listed)))}
        return {lid: (pos.get(lid, len(listed)), KINDS.index(self.plan.lever(lid).kind), self.plan.lever(lid).index)
                for lid in self.items}

    # -- orders ------------------------------------------------------------------------------------------
    def allowed(self, lever_id: str, placed: set[str], relaxed: bool = False, seen: frozenset = frozenset()) -> bool:
        """Whether the lever's gates can hold with `placed` done before it. A lever outside the order that is
        still pending happens once its own gates hold; with `relaxed`, an experiment waits on no speed-up."""
        lever = self.plan.lever(lever_id)
        skip = relaxed and lever.kind == "experiment"

        def holds(expr) -> bool:
            if expr is None:
                return True
            if isinstance(expr, Atom):
                if expr.fact:
                    return True
                dep = expr.lever
                if dep in self.items:
                    return dep in placed or (skip and self.plan.lever(dep).kind in SPEEDUP_KINDS)
                if self.state(dep) in ("decided", "adopted", "rejected", "deferred", "closed") or dep in seen:
                    return True
                return self.allowed(dep, placed, relaxed, seen | {lever_id})
            results = [holds(item) for item in expr.items]
            return all(results) if expr.op == "all" else any(results)

        return holds(lever.requires)

    def evaluate(self, order) -> OrderResult:
        """An order of the pending items, behind the levers already adopted (whose re-runs are history)."""
        fixed = len(self.fixed)
        result = OrderResult(tuple(order), 0.0, 0.0)
        order = list(self.fixed) + list(order)
        after = [0.0] * (len(order) + 1)  # planned hours at the places after each position, the tail aside
        for i in range(len(order) - 1, -1, -1):
            after[i] = after[i + 1] + self.at_slot.get(order[i], 0.0)
        tail = self.tail_h
        stack, saved, cost = 1.0, 0.0, 0.0
        ran = [w for w in self.work if w.done]
        for i, item in enumerate(order):
            fig = self.levers.get(item)
            if fig is None:
                ran += [w for w in self.work if w.lever == item]
                continue
            volume = stack * (after[i + 1] + tail)
            a = fig.a
            h = None if a is None or not self.work else a * volume - fig.cost_h
            result.per_lever[item] = (volume, h)
            cost += fig.cost_h
            for w in ran if i >= fixed else ():
                if item in w.rerun_when and fig.q != 0:
                    hours = (None if w.run_h is None or fig.q is None or fig.f is None
                             else fig.q * w.run_h * stack * (1 - fig.f))
                    result.reruns.append({"experiment": w.id, "lever": item, "hours": hours})
            if a is not None:
                saved += a * volume
                stack *= 1 - a
        cost += sum(f.cost_h for f in self.levers.values() if f.state == "rejected")  # spent, whatever the order
        result.saved_h, result.cost_h = saved, cost
        return result

    def key(self, result: OrderResult) -> tuple:
        return (-round(result.net_h, 9), len(result.reruns), tuple(self.priority[i] for i in result.order))

    def topo(self, items, placed=(), relaxed=False, before=None) -> list[str]:
        """`items` in the plan's priority among those whose gates allow them (stable, like `next`)."""
        placed, left, out = set(placed), set(items), []
        while left:
            free = [i for i in left if self._free(i, placed, relaxed, before)]
            pick = min(free or left, key=self.priority.__getitem__)
            out.append(pick)
            placed.add(pick)
            left.discard(pick)
        return out

    def _free(self, item: str, placed: set[str], relaxed: bool, before) -> bool:
        if before and item == before[1] and before[0] not in placed:
            return False
        return self.allowed(item, placed, relaxed)

    def best(self, relaxed: bool = False, before: tuple[str, str] | None = None) -> tuple[OrderResult | None, int, str]:
        """The order that saves most (`before`: with before[0] ahead of before[1]); with how many were tried."""
        if len(self.items) <= EXHAUSTIVE:
            best, count = None, 0
            for order in self._orders([], set(self.items), relaxed, before):
                count += 1
                result = self.evaluate(order)
                if best is None or self.key(result) < self.key(best):
                    best = result
            return best, count, "every order"
        order: list[str] = []
        left = set(self.items)
        count = 0
        while left:
            choices = []
            for item in sorted(left, key=self.priority.__getitem__):
                if not self._free(item, set(order), relaxed, before):
                    continue
                rest = self.topo(left - {item}, set(order) | {item}, relaxed, before)
                count += 1
                choices.append(self.evaluate(order + [item] + rest))
            if not choices:
                return None, count, "greedy"
            pick = min(choices, key=self.key).order[len(order)]
            order.append(pick)
            left.discard(pick)
        return self.evaluate(order), count, "greedy"

    def _orders(self, prefix: list[str], left: set[str], relaxed: bool, before):
        if not left:
            yield tuple(prefix)
            return
        placed = set(prefix)
        for item in sorted(left, key=self.priority.__getitem__):
            if self._free(item, placed, relaxed, before):
                prefix.append(item)
                left.discard(item)
                yield from self._orders(prefix, left, relaxed, before)
                left.add(item)
                prefix.pop()

    # -- the report ---------------------------------------------------------------------------------------------
    def plan_order(self) -> OrderResult:
        result = self.evaluate(self.topo(self.items))
        for fig in self.levers.values():
            if fig.state == "rejected" and self.work:
                fig.h = -fig.cost_h
        for lid, (volume, h) in result.per_lever.items():
            fig = self.levers[lid]
            fig.v_h, fig.h = (volume, h) if self.work else (None, None)
            if fig.a and fig.a > 0:
                fig.v_star_h = fig.cost_h / fig.a
            if h is not None and fig.q is not None and fig.s_low and fig.s_high:
                fig.h_low, fig.h_high = (fig.q * fig.share * (1 - 1 / s) * volume - fig.cost_h
                                         for s in (fig.s_low, fig.s_high))
        return result

    def report(self, search: bool = True) -> dict:
        planned = self.plan_order()
        shown = self.fixed + [lid for lid in planned.order if lid in self.levers]
        shown += [lid for lid in self.levers if lid not in shown]  # rejected: in no order, their cost stands
        out = {"formula": FORMULA, "volume": self.volume_dict(), "plan_order": planned.to_dict(), "stack": self.fixed,
               "levers": [self.levers[lid].to_dict() for lid in shown],
               "best_order": None, "agrees": None, "verdict": None, "sequencing": []}
        if search and self.work:
            best, count, method = self.best()
            if best is not None:
                out["best_order"] = dict(best.to_dict(), tried=count, method=method)
                agrees = best.net_h <= planned.net_h + EPS_H
                out["agrees"] = agrees
                out["verdict"] = _verdict(planned, best, count, method, agrees)
            out["sequencing"] = self.sequencing()
        for lid in self.levers:
            fig = self.levers[lid]
            if fig.straddles_one:
                self.notes.append(f"{lid}: its S interval [{fig.s_low:.2f}, {fig.s_high:.2f}] straddles 1: it may "
                                     "slow an iteration (H low–high in the table)")
        out.update(assumptions=self.assumptions, defaults=self.defaults, notes=self.notes, missing=self.missing)
        return out

    def sequencing(self) -> list[dict]:
        """For each experiment the plan's gates keep behind a speed-up (the seed's "infra first"): the best order
        as the plan has it against the best with the experiment first, re-runs and all."""
        out, first = [], None
        for exp in self.items:
            if self.plan.lever(exp).kind != "experiment":
                continue
            others = set(self.items) - {exp}
            for dep in self.items:
                if dep not in self.levers or self.allowed(exp, others - {dep}):
                    continue
                first = first or self.best()[0]
                reverse, _, _ = self.best(relaxed=True, before=(exp, dep))
                if first is None or reverse is None:
                    continue
                gain = first.net_h - reverse.net_h
                out.append({"lever": dep, "experiment": exp, "first_h": first.net_h, "reverse_h": reverse.net_h,
                            "reverse_order": list(reverse.order), "reverse_reruns": len(reverse.reruns),
                            "gain_h": gain, "holds": gain > -EPS_H})
        return out

    def volume_dict(self) -> dict:
        if self.plan.volume is None:
            return {"declared": False}
        rows = []
        for e in self.plan.volume.experiments:
            w = next((w for w in self.work if w.id == e.id), None)
            rows.append({"id": e.id, "title": e.title, "lever": e.lever, "configs": e.configs,
                         "iterations": e.iterations, "runs": e.runs, "done": w.done if w else 0,
                         "run_h": w.run_h if w else None, "ahead_h": w.ahead_h if w and w.run_h is not None else None,
                         "assumed": list(e.assumed), "counted": w is not None,
                         "at": (w.lever or "after every lever") if w else "closed",
                         "rerun_when": sorted(w.rerun_when) if w else []})
        known = [r["ahead_h"] for r in rows if r["ahead_h"] is not None]
        return {"declared": True, "s_per_iter": self.s_per_iter, "s_per_iter_source": self.s_source,
                "s_per_iter_assumed": self.s_source == "declared" and "s_per_iter" in self.plan.volume.assumed,
                "experiments": rows, "hours": sum(known) if known else None}


def _verdict(planned: OrderResult, best: OrderResult, count: int, method: str, agrees: bool) -> str:
    tried = f"{count} order{'s' * (count != 1)} tried" if method == "every order" else f"greedy, {count} tried"
    fewer = len(planned.reruns) - len(best.reruns)
    if agrees:
        text = f"the plan's order nets as much as any ({tried}): {planned.net_h:.2f} h"
        avoided = [r for r in planned.reruns if r not in best.reruns]
        if fewer > 0 and avoided:
            # equal hours, fewer re-runs: the re-runs it avoids have no hours yet (their lever lacks S or q)
            text += (f"; {' → '.join(best.order)} also avoids {fewer} re-run{'s' * (fewer != 1)} of unknown hours ("
                     + ", ".join(f"{r['experiment']} after {r['lever']}" for r in avoided) + ")")
        return text
    return (f"the calculus disagrees with the plan's order: {' → '.join(best.order)} nets {best.net_h:.2f} h "
            f"against the plan's {planned.net_h:.2f} h (+{best.net_h - planned.net_h:.2f} h"
            + (f", {fewer} fewer re-run{'s' * (fewer != 1)}" if fewer > 0 else "") + f"; {tried})")


def order_text(result: dict) -> str:
    """`a → b: saves X h, costs Y h, forces N re-runs (…); net Z h` of an order's to_dict()."""
    reruns = result["reruns"]
    text = " → ".join(result["order"]) + f": saves {fmt_h(result['saved_h'])} h, costs {fmt_h(result['cost_h'])} h"
    if reruns:
        text += f", forces {len(reruns)} re-run{'s' * (len(reruns) != 1)} (" + ", ".join(
            f"{r['experiment']} after {r['lever']}: {fmt_h(r['hours'])} h" for r in reruns) + ")"
    return text + f"; net {fmt_h(result['net_h'])} h"


def sequencing_text(seq: dict) -> str:
    """One line of the infra-first check: the plan's gate against the experiment run first."""
    lever, exp, n = seq["lever"], seq["experiment"], seq["reverse_reruns"]
    head = (f"{lever} before {exp} (the plan's gate) nets {fmt_h(seq['first_h'])} h; {exp} first nets "
            f"{fmt_h(seq['reverse_h'])} h ({n} re-run{'s' * (n != 1)})")
    if seq["holds"]:
        return f"{head}: {lever} first holds, by {fmt_h(seq['gain_h'])} h"
    return f"{head}: the calculus would run {exp} first, {fmt_h(-seq['gain_h'])} h better"


def p_median_at_least(ratios, threshold: float) -> float:
    """The bootstrap probability that the median ratio reaches `threshold`, computed exactly.

    A resample of n ratios with replacement holds Binomial(n, p) ratios ≥ threshold, p the share of such ratios;
    its median reaches the threshold when more than half do. For even n, exactly half leaves the two middle
    values on either side: counted as half a chance (their mean may fall either way).
    """
    n = len(ratios)
    if n == 0:
        raise ValueError("no ratios")
    p = sum(1 for r in ratios if r >= threshold) / n

    def pmf(k: int) -> float:
        return math.comb(n, k) * p ** k * (1 - p) ** (n - k)

    if n % 2:
        return sum(pmf(k) for k in range((n + 1) // 2, n + 1))
    return sum(pmf(k) for k in range(n // 2 + 1, n + 1)) + 0.5 * pmf(n // 2)


def compute(plan: Plan, machine, search: bool = True) -> dict:
    """The whole what-if report as plain data (what `optseq whatif --json` prints)."""
    return Calculus(plan, machine).report(search=search)


def hours_by_lever(seq) -> dict[str, float | None]:
    """Every lever's expected hours saved in the plan's order (None: not pending, or an input is missing); cheap
    (no search), for a status or console column."""
    with seq.lock:
        calc = Calculus(seq.plan, seq.machine)
        calc.plan_order()
        return {lv.id: (calc.levers[lv.id].h if lv.id in calc.levers else None) for lv in seq.plan.levers}


def fmt_h(hours: float | None) -> str:
    """Hours for a table: one decimal from 10 h, two below, three significant figures under 0.1 h."""
    if hours is None:
        return "—"
    if abs(hours) >= 10:
        return f"{hours:.1f}"
    if abs(hours) >= 0.1 or hours == 0:
        return f"{hours:.2f}"
    return f"{hours:.3g}"


def _stats(run: dict | None) -> dict | None:
    summary = (run or {}).get("summary")
    stats = summary.get("stats") if isinstance(summary, dict) else None
    return stats if isinstance(stats, dict) else None


def _run_hours(run: dict) -> float | None:
    try:
        start = dt.datetime.fromisoformat(str(run["started"]))
        end = dt.datetime.fromisoformat(str(run["ended"]))
        seconds = (end - start).total_seconds()
    except (KeyError, TypeError, ValueError):
        return None
    return seconds / 3600 if seconds >= 0 else None


def _number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
