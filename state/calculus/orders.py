"""The order search: an order's hours, the orders the gates allow (every one up to EXHAUSTIVE, greedy beyond),
the best against the plan's own, and the verdict in words."""
from __future__ import annotations

import msgspec

from optseq.state.calculus.inputs import Inputs
from optseq.state.calculus.words import Said, plural
from optseq.state.plan.gates import Atom
from optseq.state.plan.volume import SPEEDUP_KINDS

EXHAUSTIVE = 8
"""Most levers (speed-ups and experiments) whose every order is tried; more use the greedy rule."""
EPS_H = 0.005
"""Hours two orders may differ by and still count as saving the same (what a table shows at two decimals)."""


class OrderResult(msgspec.Struct):
    order: tuple[str, ...]
    saved_h: float
    cost_h: float
    reruns: list[dict] = msgspec.field(default_factory=list)
    """{experiment, lever, hours (None when unknown)} for each re-run the order forces."""
    per_lever: dict[str, tuple[float, float | None]] = msgspec.field(default_factory=dict)
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


class Orders:
    """The search over the inputs' items: what an order nets, and which order nets most."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs

    def allowed(self, lever_id: str, placed: set[str], relaxed: bool = False, seen: frozenset = frozenset()) -> bool:
        """Whether the lever's gates can hold with `placed` done before it. A lever outside the order that is
        still pending happens once its own gates hold; with `relaxed`, an experiment waits on no speed-up."""
        inputs = self.inputs
        lever = inputs.plan.lever(lever_id)
        skip = relaxed and lever.kind == "experiment"

        def holds(expr) -> bool:
            if expr is None:
                return True
            if isinstance(expr, Atom):
                if expr.fact:
                    return True
                dep = expr.named
                if dep in inputs.items:
                    return dep in placed or (skip and inputs.plan.lever(dep).kind in SPEEDUP_KINDS)
                if inputs.state(dep) in ("decided", "adopted", "rejected", "deferred", "closed") or dep in seen:
                    return True
                return self.allowed(dep, placed, relaxed, seen | {lever_id})
            results = [holds(item) for item in expr.items]
            return all(results) if expr.op == "all" else any(results)

        return holds(lever.requires)

    def evaluate(self, order) -> OrderResult:
        """An order of the pending items, behind the levers already adopted (whose re-runs are history)."""
        inputs = self.inputs
        fixed = len(inputs.fixed)
        result = OrderResult(tuple(order), 0.0, 0.0)
        order = list(inputs.fixed) + list(order)
        after = [0.0] * (len(order) + 1)  # planned hours at the places after each position, the tail aside
        for i in range(len(order) - 1, -1, -1):
            after[i] = after[i + 1] + inputs.at_slot.get(order[i], 0.0)
        tail = inputs.tail_h
        stack, saved, cost = 1.0, 0.0, 0.0
        ran = [w for w in inputs.work if w.done]
        for i, item in enumerate(order):
            fig = inputs.levers.get(item)
            if fig is None:
                ran += [w for w in inputs.work if w.lever == item]
                continue
            volume = stack * (after[i + 1] + tail)
            a = fig.a
            h = None if a is None or not inputs.work else a * volume - fig.cost_h
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
        cost += sum(f.cost_h for f in inputs.levers.values() if f.state == "rejected")  # spent, whatever the order
        result.saved_h, result.cost_h = saved, cost
        return result

    def key(self, result: OrderResult) -> tuple:
        return (-round(result.net_h, 9), len(result.reruns), tuple(self.inputs.priority[i] for i in result.order))

    def topo(self, items, placed=(), relaxed=False, before=None) -> list[str]:
        """`items` in the plan's priority among those whose gates allow them (stable)."""
        inputs = self.inputs
        placed, left, out = set(placed), set(items), []
        while left:
            free = [i for i in left if self._free(i, placed, relaxed, before)]
            pick = min(free or left, key=inputs.priority.__getitem__)
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
        inputs = self.inputs
        if len(inputs.items) <= EXHAUSTIVE:
            best, count = None, 0
            for tried in self._orders([], set(inputs.items), relaxed, before):
                count += 1
                result = self.evaluate(tried)
                if best is None or self.key(result) < self.key(best):
                    best = result
            return best, count, "every order"
        order: list[str] = []
        left = set(inputs.items)
        count = 0
        while left:
            choices = []
            for item in sorted(left, key=inputs.priority.__getitem__):
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
        inputs = self.inputs
        if not left:
            yield tuple(prefix)
            return
        placed = set(prefix)
        for item in sorted(left, key=inputs.priority.__getitem__):
            if self._free(item, placed, relaxed, before):
                prefix.append(item)
                left.discard(item)
                yield from self._orders(prefix, left, relaxed, before)
                left.add(item)
                prefix.pop()

    def sequencing(self) -> list[dict]:
        """For each experiment the plan's gates keep behind a speed-up (the seed's "infra first"): the best order
        as the plan has it against the best with the experiment first, re-runs and all."""
        inputs = self.inputs
        out, first = [], None
        for exp in inputs.items:
            if inputs.plan.lever(exp).kind != "experiment":
                continue
            others = set(inputs.items) - {exp}
            for dep in inputs.items:
                if dep not in inputs.levers or self.allowed(exp, others - {dep}):
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


def verdict(planned: OrderResult, best: OrderResult, count: int, method: str, agrees: bool) -> Said:
    tried = Said("tried_every", n=count, s=plural(count)) if method == "every order" else Said("tried_greedy", n=count)
    fewer = len(planned.reruns) - len(best.reruns)
    if agrees:
        avoided = [r for r in planned.reruns if r not in best.reruns]
        if fewer > 0 and avoided:
            # equal hours, fewer re-runs: the re-runs it avoids have no hours yet (their lever lacks S or q)
            return Said("agrees_avoids", tried=tried, net=planned.net_h, order=" → ".join(best.order), n=fewer,
                        s=plural(fewer), reruns=[Said("rerun_after", experiment=r["experiment"], lever=r["lever"])
                                                 for r in avoided])
        return Said("agrees", tried=tried, net=planned.net_h)
    return Said("disagrees_fewer" if fewer > 0 else "disagrees", order=" → ".join(best.order), best=best.net_h,
                planned=planned.net_h, gain=best.net_h - planned.net_h, n=fewer, s=plural(fewer), tried=tried)
