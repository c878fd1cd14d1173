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

Here the report (Calculus) and its words; its inputs in inputs.py (the figures they fill in figures.py), the
order search in orders.py.
"""
from __future__ import annotations

from typing import Any

from optseq.state.calculus.inputs import Inputs
from optseq.state.calculus.orders import EPS_H, OrderResult, Orders, verdict
from optseq.state.calculus.words import Said, plural
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.plan.model import Plan
from optseq.state.text import ratio_text

FORMULA = "H = q · share · (1 − 1/S) · V − C;  V* = C / (q · share · (1 − 1/S))"


class Calculus:
    """The report: the plan's order with each lever's figures in it, the best order, and what the inputs lack; over
    the Inputs it reads and the Orders that search them."""

    def __init__(self, plan: Plan, machine: PlanMachine):
        self.inputs = Inputs(plan, machine)
        self.orders = Orders(self.inputs)

    def plan_order(self) -> OrderResult:
        inputs = self.inputs
        result = self.orders.evaluate(self.orders.topo(inputs.items))
        for fig in inputs.levers.values():
            if fig.state == "rejected" and inputs.work:
                fig.h = -fig.cost_h
        for lid, (volume, h) in result.per_lever.items():
            fig = inputs.levers[lid]
            fig.v_h, fig.h = (volume, h) if inputs.work else (None, None)
            if fig.a and fig.a > 0:
                fig.v_star_h = fig.cost_h / fig.a
            if h is not None and fig.q is not None and fig.s_low and fig.s_high:
                fig.h_low, fig.h_high = (fig.q * fig.share * (1 - 1 / s) * volume - fig.cost_h
                                         for s in (fig.s_low, fig.s_high))
        return result

    def report(self, search: bool = True) -> dict:
        inputs = self.inputs
        planned = self.plan_order()
        shown = inputs.fixed + [lid for lid in planned.order if lid in inputs.levers]
        shown += [lid for lid in inputs.levers if lid not in shown]  # rejected: in no order, their cost stands
        out: dict[str, Any] = {"formula": FORMULA, "volume": self.volume_dict(), "plan_order": planned.to_dict(), "stack": inputs.fixed,
               "levers": [inputs.levers[lid].to_dict() for lid in shown],
               "best_order": None, "agrees": None, "verdict": None, "sequencing": []}
        if search and inputs.work:
            best, count, method = self.orders.best()
            if best is not None:
                out["best_order"] = dict(best.to_dict(), tried=count, method=method)
                agrees = best.net_h <= planned.net_h + EPS_H
                out["agrees"] = agrees
                out["verdict"] = verdict(planned, best, count, method, agrees)
            out["sequencing"] = self.orders.sequencing()
        notes = list(inputs.notes)  # the inputs' notes, then the report's own
        for lid in inputs.levers:
            low, high = inputs.levers[lid].s_low, inputs.levers[lid].s_high
            if low is not None and high is not None and low < 1 < high:  # LeverFigures.straddles_one
                notes.append(Said("straddles", lever=lid, low=ratio_text(low), high=ratio_text(high)))
        out.update(assumptions=inputs.assumptions, defaults=inputs.defaults, notes=notes, missing=inputs.missing)
        return out

    def volume_dict(self) -> dict:
        inputs = self.inputs
        if inputs.plan.volume is None:
            return {"declared": False}
        rows = []
        for e in inputs.plan.volume.experiments:
            w = next((w for w in inputs.work if w.id == e.id), None)
            rows.append({"id": e.id, "title": e.title, "lever": e.lever, "configs": e.configs,
                         "iterations": e.iterations, "runs": e.runs, "done": w.done if w else 0,
                         "run_h": w.run_h if w else None, "ahead_h": w.ahead_h if w and w.run_h is not None else None,
                         "assumed": list(e.assumed), "counted": w is not None,
                         "at": (w.lever or "after every lever") if w else "closed",
                         "rerun_when": sorted(w.rerun_when) if w else []})
        known = [r["ahead_h"] for r in rows if r["ahead_h"] is not None]
        return {"declared": True, "s_per_iter": inputs.s_per_iter, "s_per_iter_source": inputs.s_source,
                "s_per_iter_assumed": inputs.s_source == "declared" and "s_per_iter" in inputs.plan.volume.assumed,
                "experiments": rows, "hours": sum(known) if known else None}


def order_text(result: dict) -> Said:
    """`a → b: saves X h, costs Y h, forces N re-runs (…); net Z h` of an order's to_dict()."""
    reruns = result["reruns"]
    fields = dict(order=" → ".join(result["order"]), saved=fmt_h(result["saved_h"]), cost=fmt_h(result["cost_h"]),
                  net=fmt_h(result["net_h"]))
    if not reruns:
        return Said("order", **fields)
    return Said("order_reruns", n=len(reruns), s=plural(len(reruns)), **fields,
                reruns=[Said("rerun_hours", experiment=r["experiment"], lever=r["lever"], hours=fmt_h(r["hours"]))
                        for r in reruns])


def sequencing_text(seq: dict) -> Said:
    """One line of the infra-first check: the plan's gate against the experiment run first."""
    n, gain = seq["reverse_reruns"], seq["gain_h"]
    return Said("gate_holds" if seq["holds"] else "gate_fails", lever=seq["lever"], experiment=seq["experiment"],
                first=fmt_h(seq["first_h"]), reverse=fmt_h(seq["reverse_h"]), n=n, s=plural(n),
                gain=fmt_h(gain if seq["holds"] else -gain))


def compute(plan: Plan, machine: PlanMachine, search: bool = True) -> dict:
    """The whole what-if report as plain data (what `optseq whatif --json` prints)."""
    return Calculus(plan, machine).report(search=search)


def hours_by_lever(held) -> dict[str, float | None]:
    """Every lever's expected hours saved in the plan's order (None: not pending, or an input is missing); cheap
    (no search), for a status or console column. `held`: what an open holds (state/held.py's Held: its lock, plan and
    machine), which the views pass."""
    with held.lock:
        calc = Calculus(held.plan, held.machine)
        calc.plan_order()
        figures = calc.inputs.levers
        return {lv.id: (figures[lv.id].h if lv.id in figures else None) for lv in held.plan.levers}


def fmt_h(hours: float | None) -> str:
    """Hours for a table: one decimal from 10 h, two below, three significant figures under 0.1 h."""
    if hours is None:
        return "—"
    if abs(hours) >= 10:
        return f"{hours:.1f}"
    if abs(hours) >= 0.1 or hours == 0:
        return f"{hours:.2f}"
    return f"{hours:.3g}"
