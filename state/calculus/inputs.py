"""The calculus's inputs, read from the plan and the lever machine: each speed-up's figures, the planned work, the
plan's priority, and what is assumed, defaulted or missing."""
from __future__ import annotations

import datetime as dt
import math

from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.record_types import Run
from optseq.state.runs.measured_on import CI_SIZE, at_ci_size
from optseq.state.calculus.figures import LeverFigures, Work
from optseq.state.calculus.words import Said
from optseq.state.plan.model import KINDS, Plan
from optseq.state.plan.volume import SPEEDUP_KINDS
from optseq.state.text import ratio_text

DECIDED_SPEEDUP = ("adopted", "rejected")


class Inputs:
    """What an order is weighed on, read once: the search (orders.Orders) and the report (whatif.Calculus) are given
    it in their constructors; the report fills each lever's figures with its hours in the plan's order."""

    def __init__(self, plan: Plan, machine):
        self.plan, self.m = plan, machine
        # each a Said: English as the CLI prints it, said again in the export's language
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
            self.assumptions.append(Said("adopted_since", levers=", ".join(self.fixed)))
        self._name_defaults()
        self.s_per_iter, self.s_source = self._s_per_iter()
        self.work = self._work() if plan.volume else []
        if plan.volume is None:
            self.missing.insert(0, Said("no_volume"))
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
            if model.state in DECIDED_SPEEDUP and model.decision and model.decision.source == "plan":
                continue
            out.append(lv.id)
        return out

    def _figures(self, lever_id: str) -> LeverFigures:
        lever = self.plan.lever(lever_id)
        fig = LeverFigures(lever_id, lever.kind, self.state(lever_id))
        stats = _stats(self.m.runs.last_stats.get(lever_id))
        decision = self.m.models[lever_id].decision
        if stats is None and decision is not None and decision.stats is not None:
            stats = decision.stats
        expect = lever.expect
        if stats and _number(stats.get("estimate")):
            fig.s, fig.s_source, fig.n = float(stats["estimate"]), "measured", stats.get("n")
            fig.s_low, fig.s_high = _number(stats.get("ci_low")), _number(stats.get("ci_high"))
            fig.s_ci_size = at_ci_size(stats)
            if fig.s_ci_size:
                self.assumptions.append(Said("s_ci_size", lever=lever_id, s=ratio_text(fig.s)))
        elif expect and expect.speedup is not None:
            fig.s, fig.s_source = expect.speedup, "prior"
            s = ratio_text(expect.speedup)
            self.assumptions.append(Said("s_prior_note", lever=lever_id, s=s, note=expect.note) if expect.note
                                    else Said("s_prior", lever=lever_id, s=s))
        elif lever.prior and lever.prior.estimate is not None:
            fig.s, fig.s_source = lever.prior.estimate, "prior"
            self.assumptions.append(Said("s_plan_prior", lever=lever_id, s=ratio_text(lever.prior.estimate)))
        # the units the run's test counted (launches, or pairs where each arm run is its own process): a resample
        # of pairs inside one launch would take their shared speed for independent evidence
        units = (stats or {}).get("units") or (stats or {}).get("ratios") or ()
        ratios = [r for r in units if _number(r) is not None]
        if fig.state in DECIDED_SPEEDUP:
            fig.q, fig.q_source = (1.0, "adopted") if fig.state == "adopted" else (0.0, "rejected")
        elif ratios:
            threshold = lever.rule.min_speedup if lever.rule else 1.0
            fig.q, fig.q_source = p_median_at_least(ratios, threshold), "measured"
        elif expect and expect.p_adopt is not None:
            fig.q, fig.q_source = expect.p_adopt, "prior"
            self.assumptions.append(Said("q_prior", lever=lever_id, q=expect.p_adopt))
        lacking = [k for k, v in (("S", fig.s), ("q", fig.q)) if v is None]
        if lacking:
            keys = ", ".join({"S": "speedup", "q": "p_adopt"}[k] for k in lacking)
            inputs = Said("both", a="S", b="q") if len(lacking) == 2 else lacking[0]
            self.missing.append(Said("lacking_run" if lever.run else "lacking", lever=lever_id, inputs=inputs,
                                     keys=keys))
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
            self.missing.append(Said("runs_untimed", lever=lever_id, n=fig.runs_unknown))
        return fig

    def _name_defaults(self) -> None:
        """What the plan leaves undeclared, one line per input, naming the levers and the value counted."""
        figs = self.levers.values()
        shares = [f.id for f in figs if f.share_source == "default"]
        if shares:
            self.defaults.append(Said("share_default", levers=", ".join(shares)))
        effort = [f for f in figs if f.effort_source == "default"]
        if effort:
            self.defaults.append(Said("effort_default", levers=", ".join(f.id for f in effort)))
        free = [f.id for f in effort if not f.runs_counted]
        if free:
            self.defaults.append(Said("no_cost", levers=", ".join(free)))

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
                self.missing.append(Said("s_per_iter_unmeasured", lever=lever_id, metric=metric))
                return None, "missing"
        if volume.s_per_iter is None:
            if any(e.s_per_iter is None for e in volume.experiments):
                self.missing.append(Said("s_per_iter_missing"))
            return None, "missing"
        if "s_per_iter" in volume.assumed:
            self.assumptions.append(Said("s_per_iter_assumed", s=volume.s_per_iter))
        return volume.s_per_iter, "declared"

    def _measured_seconds(self, lever_id: str, metric: str) -> float | None:
        """The chosen config's median `metric` in the experiment's latest run that has it (the mean over configs
        while none is chosen), in seconds."""
        for run in reversed(self.m.runs.recent.get(lever_id, [])):
            figures = run.figures
            arms = figures.arms or {}
            cells = {name: row[metric] for name, row in arms.items() if isinstance(row, dict)
                     and isinstance(row.get(metric), dict) and _number(row[metric].get("median")) is not None}
            if not cells:
                continue
            chosen = figures.chosen if isinstance(figures.chosen, str) else None
            picked = [cells[chosen]] if chosen in cells else list(cells.values())
            # measured with levers adopted since the plan: back to the plan's stack, which the volume is counted on
            stack = 1.0
            for other in (run.infra or {}).get("adopted") or ():
                f = self.levers[other].f if other in self.fixed else None
                if f is not None:
                    stack *= 1 - f
            scale = {"s": 1.0, "": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}.get(str(picked[0].get("unit") or ""))
            if figures.bench_size == CI_SIZE:
                self.assumptions.append(Said("s_per_iter_ci_size", lever=lever_id, metric=metric))
            if scale is None:
                self.missing.append(Said("s_per_iter_unit", lever=lever_id, metric=metric,
                                         unit=picked[0].get("unit")))
                return None
            return scale * sum(float(c["median"]) for c in picked) / len(picked) / stack
        return None

    def _work(self) -> list[Work]:
        volume = self.plan.volume
        if volume is None:  # a plan without [volume] plans no experiments
            return []
        infra = frozenset(lv.id for lv in self.plan.levers if lv.kind == "infra")
        out = []
        for e in volume.experiments:
            if e.assumed:
                self.assumptions.append(Said("experiment_assumed", experiment=e.id,
                                             values=", ".join(f"{key} {getattr(e, key):g}" for key in e.assumed)))
            seconds = e.s_per_iter if e.s_per_iter is not None else self.s_per_iter
            state = self.state(e.lever) if e.lever else None
            if state == "closed":
                self.notes.append(Said("experiment_closed", experiment=e.id, lever=e.lever))
                continue
            done = 1 if state == "decided" else 0
            run_h = None if seconds is None else e.configs * e.iterations * seconds / 3600
            out.append(Work(e.id, e.lever if not done else None, run_h, e.runs, done,
                            frozenset(e.rerun_when) if e.rerun_when is not None else infra))
        return out

    def _plan_priority(self) -> dict[str, tuple]:
        """The plan's recommended order: its [[order]] items first, then kind and plan order."""
        listed = [lid for item in self.plan.order for lid in item.levers]
        pos = {lid: i for i, lid in reversed(list(enumerate(listed)))}
        return {lid: (pos.get(lid, len(listed)), KINDS.index(self.plan.lever(lid).kind), self.plan.lever(lid).index)
                for lid in self.items}


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


def _stats(run: KeptRun | None) -> dict | None:
    """A run's statistics as stored, every key (the per-pair units and ratios among them), None where it has none."""
    return run.stored_stats if run is not None and run.figures.stats is not None else None


def _run_hours(run: Run) -> float | None:
    elapsed = _number(run.elapsed_s)
    if elapsed is not None and elapsed >= 0:  # the monotonic length: a wall-clock jump during the run is no cost
        return elapsed / 3600
    try:
        start = dt.datetime.fromisoformat(str(run.started))
        end = dt.datetime.fromisoformat(str(run.ended))
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
