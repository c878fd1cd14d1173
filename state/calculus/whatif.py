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

from optseq.state.calculus.orders import EPS_H, OrderResult, Orders, verdict
from optseq.state.calculus.words import Said, plural
from optseq.state.plan.model import Plan
from optseq.state.text import ratio_text

FORMULA = "H = q · share · (1 − 1/S) · V − C;  V* = C / (q · share · (1 − 1/S))"


class Calculus(Orders):
    """The report: the plan's order with each lever's figures in it, the best order, and what the inputs lack."""

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
        out: dict[str, Any] = {"formula": FORMULA, "volume": self.volume_dict(), "plan_order": planned.to_dict(), "stack": self.fixed,
               "levers": [self.levers[lid].to_dict() for lid in shown],
               "best_order": None, "agrees": None, "verdict": None, "sequencing": []}
        if search and self.work:
            best, count, method = self.best()
            if best is not None:
                out["best_order"] = dict(best.to_dict(), tried=count, method=method)
                agrees = best.net_h <= planned.net_h + EPS_H
                out["agrees"] = agrees
                out["verdict"] = verdict(planned, best, count, method, agrees)
            out["sequencing"] = self.sequencing()
        for lid in self.levers:
            low, high = self.levers[lid].s_low, self.levers[lid].s_high
            if low is not None and high is not None and low < 1 < high:  # LeverFigures.straddles_one
                self.notes.append(Said("straddles", lever=lid, low=ratio_text(low), high=ratio_text(high)))
        out.update(assumptions=self.assumptions, defaults=self.defaults, notes=self.notes, missing=self.missing)
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


def compute(plan: Plan, machine, search: bool = True) -> dict:
    """The whole what-if report as plain data (what `optseq whatif --json` prints)."""
    return Calculus(plan, machine).report(search=search)


def hours_by_lever(held) -> dict[str, float | None]:
    """Every lever's expected hours saved in the plan's order (None: not pending, or an input is missing); cheap
    (no search), for a status or console column. `held`: what an open holds (state/held.py's Held: its lock, plan and
    machine), which the views pass."""
    with held.lock:
        calc = Calculus(held.plan, held.machine)
        calc.plan_order()
        return {lv.id: (calc.levers[lv.id].h if lv.id in calc.levers else None) for lv in held.plan.levers}


def fmt_h(hours: float | None) -> str:
    """Hours for a table: one decimal from 10 h, two below, three significant figures under 0.1 h."""
    if hours is None:
        return "—"
    if abs(hours) >= 10:
        return f"{hours:.1f}"
    if abs(hours) >= 0.1 or hours == 0:
        return f"{hours:.2f}"
    return f"{hours:.3g}"
