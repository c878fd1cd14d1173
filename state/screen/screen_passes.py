"""Between the blocks of a screen: fit what came back, decide each lever by its own rule, ask for more or stop.

The screen's run and the simulation behind `make simulate`'s screen rows both go through this one class (as
ABPasses is for one lever), so the error rates the simulation measures are those of real screens.

The error is held as the single-lever rule holds it: a lever whose true ratio equals its threshold is adopted
with probability at most ALPHA over all looks, whatever the other levers do. Each look spends the increment of
runs/sequential.py's Lan-DeMets function over the block budget, per side, on a one-sided t bound of each effect
(Bonferroni over the looks: the increments sum to ALPHA, so the chance any look crosses is at most ALPHA where
each bound holds its level). The levers' effects are estimated from the same runs but each holds its own level;
the error is per lever, as a plan's levers are decided one by one today.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from optseq.state.plan.model import Rule
from optseq.state.runs.sequential import ALPHA, spent
from optseq.state.screen.analysis import AnalysisError, Effect, Fit, Observation, fit
from optseq.state.screen.design import LETTERS, Design, first_blocks, folded
from optseq.state.text import ratio_text

OUTCOMES = ("adopt", "reject", "inconclusive", "confirm")


@dataclass(frozen=True)
class LeverCall:
    lever: str
    outcome: str
    """adopt | reject | inconclusive | confirm (its gain depends on another lever: the combination must be
    confirmed by the paired test before any adopt)."""
    reason: str
    """One line with the figures."""
    low: float | None
    high: float | None
    """The sequential bounds on its ratio at this look (None before a look can decide)."""
    more_blocks: int | None = None
    """Undecided at the budget's end: the blocks more that would likely settle it, 0 where none would (it lies at
    its threshold); None otherwise."""

    def to_dict(self) -> dict:
        return {"lever": self.lever, "outcome": self.outcome, "reason": self.reason, "low": self.low,
                "high": self.high, "more_blocks": self.more_blocks}


@dataclass(frozen=True)
class ScreenStep:
    more: int
    """Blocks the next pass should run; 0 = stop."""
    fit: Fit | None
    calls: dict[str, LeverCall]
    interactions: tuple[Effect, ...]
    """The significant ones."""
    said: tuple[str, ...]
    """One sentence per significant interaction."""
    confirm: tuple[str, ...]
    """The best combination of the levers held for confirmation (empty if none)."""
    note: str

    def to_dict(self) -> dict:
        return {"more": self.more, "fit": self.fit.to_dict() if self.fit else None,
                "calls": {k: c.to_dict() for k, c in self.calls.items()},
                "interactions": [e.to_dict() for e in self.interactions], "said": list(self.said),
                "confirm": list(self.confirm), "note": self.note}


def interaction_sentence(e: Effect, low: float, high: float) -> str:
    """`compile × amp: 0.82× [0.75, 0.90]: compile gains 18% less with amp on`."""
    a, b = e.levers
    share = abs(1.0 - e.ratio) * 100
    how = "less" if e.ratio < 1 else "more"
    aliased = f" (aliased with {', '.join(x.replace('×', ' × ') for x in e.aliases)})" if e.aliases else ""
    return (f"{a} × {b}: {ratio_text(e.ratio)}× [{ratio_text(low)}, {ratio_text(high)}]: {a} gains {share:.0f}% "
            f"{how} with {b} on{aliased}")


class ScreenPasses:
    """One screen's looks: the fit, each lever's call, the interactions, the next request."""

    def __init__(self, design: Design, rules: Mapping[str, Rule], higher_is_better: bool, max_blocks: int):
        missing = [f for f in design.factors if f not in rules]
        if missing:
            raise ValueError(f"no rule for {', '.join(missing)}")
        self.design = design
        self.rules = dict(rules)
        self.higher_is_better = higher_is_better
        self.first = first_blocks(design)
        self.max_blocks = max(int(max_blocks), self.first)
        self.requested = self.first
        """Blocks the coming pass is asked for."""
        self.looks = 0
        self.spent_to = 0.0
        """The share of the block budget the looks so far have spent the error up to."""
        self.decided: dict[str, LeverCall] = {}
        """Levers a look has adopted or rejected: a first crossing stands (what the error bound counts)."""
        self.significant: dict[str, tuple[Effect, float, float]] = {}
        self.unsplit: dict[str, tuple[Effect, float, float]] = {}
        """A significant alias chain the blocks under way fold over to split: held until a look names its pair."""

    def after_pass(self, observations: Iterable[Observation]) -> ScreenStep:
        """Every observation so far, every block: fit, decide, ask."""
        obs = list(observations)
        blocks = len({o.block for o in obs})
        if blocks < self.first:
            self.requested = self.first - blocks
            return self._step(self.requested, None, {f: self._waiting(f, blocks) for f in self.design.factors},
                              f"block {blocks} of the {self.first} a first look needs; asking for {self.requested}")
        try:
            result = fit(self.design, obs, self.higher_is_better)
        except AnalysisError as exc:
            # a first crossing stands: a look that cannot fit leaves what earlier looks decided as they decided it
            return self._step(0, None, {f: self.decided.get(f) or LeverCall(f, "inconclusive", str(exc), None, None)
                                        for f in self.design.factors}, f"not decided: {exc}")
        share = min(blocks / self.max_blocks, 1.0)
        alpha = spent(share) - spent(self.spent_to) if share > self.spent_to else 0.0
        self.spent_to = max(self.spent_to, share)
        self.looks += 1
        for e in result.interactions:
            if e.name in self.significant or alpha <= 0:
                continue
            # Bonferroni over the interactions too: with 28 of them a look at each level names one by chance
            e_low, e_high = e.bounds(alpha / len(result.interactions))
            if e_low > 1.0 or e_high < 1.0:
                self.significant[e.name] = (e, e_low, e_high)
        self._split()
        fold = self._fold_for(blocks)
        holding = {**self.significant, **self.unsplit}
        held = {lever for e, _, _ in holding.values() for lever in self._involved(e)}
        calls = {}
        for main in result.mains:
            lever, rule = main.name, self.rules[main.name]
            low, high = main.bounds(alpha) if alpha > 0 else (None, None)
            if lever in held:
                names = [n for n, (e, _, _) in holding.items() if lever in self._involved(e)]
                calls[lever] = LeverCall(lever, "confirm", f"{self._speed(main, low, high)}: its gain depends on "
                                         f"{' and '.join(n.replace('×', ' × ') for n in names)}; the combination "
                                         "is confirmed by a paired run before any adopt", low, high)
            elif lever in self.decided:
                calls[lever] = self.decided[lever]
            elif low is not None and low > rule.min_speedup:
                calls[lever] = self.decided[lever] = LeverCall(
                    lever, "adopt", f"{self._speed(main, low, high)}: lower bound clears {rule.min_speedup:g}",
                    low, high)
            elif high is not None and high < rule.min_speedup:
                calls[lever] = self.decided[lever] = LeverCall(
                    lever, "reject", f"{self._speed(main, low, high)}: upper bound below {rule.min_speedup:g}",
                    low, high)
            else:
                calls[lever] = LeverCall(lever, "inconclusive", f"{self._speed(main, low, high)}: straddles "
                                         f"{rule.min_speedup:g}", low, high)
        open_ = [f for f, c in calls.items() if c.outcome == "inconclusive"]
        if fold:
            self.requested = 1
            return self._step(1, result, calls, fold)
        loose = self._loose(result, calls) if not open_ and blocks < self.max_blocks else ""
        if loose:
            self.requested = 1
            return self._step(1, result, calls, f"every lever decided after {_blocks(blocks)}, but {loose}; asking "
                                                "for 1 more")
        if not open_:
            return self._step(0, result, calls, f"every lever decided after {_blocks(blocks)}")
        if blocks >= self.max_blocks:
            for f in open_:
                calls[f] = self._settled(calls[f], result.effect(f), blocks)
            return self._step(0, result, calls, f"{', '.join(open_)} undecided after {_blocks(blocks)}: the "
                                                f"budget of {_blocks(self.max_blocks)} is spent")
        self.requested = 1
        return self._step(1, result, calls, f"{', '.join(open_)} undecided after {_blocks(blocks)}; asking for "
                                            "1 more")

    def _loose(self, result: Fit, calls: Mapping[str, LeverCall]) -> str:
        """An interaction of an adopted lever not yet significant whose 95% interval still holds a ratio of ratios
        as far from 1 as the lever's own min_speedup (outside [1/T, T], the bound status holds a plan's claim to):
        its gain may depend on the other lever as much as the rule asks of the gain, so the screen does not stop
        on its main effect alone while blocks remain. "" where none; else the first, in words."""
        for e in result.interactions:
            if e.name in self.significant:
                continue
            for lever in sorted(self._involved(e), key=self.design.factors.index):
                t = self.rules[lever].min_speedup
                if calls[lever].outcome == "adopt" and (e.low < 1 / t or e.high > t):
                    return (f"{e.name.replace('×', ' × ')} {ratio_text(e.ratio)}× [{ratio_text(e.low)}, "
                            f"{ratio_text(e.high)}] may still be as large as {lever}'s {t:g}×")
        return ""

    def _fold_for(self, blocks: int) -> str:
        """Where a significant alias chain holds levers and a block remains, the design is folded over on the first
        lever of the chain (in factor order), from the next block on: that lever's interactions are then estimated
        apart from the rest of the chain, so the next look can name the pair. One fold a screen. Returns the note
        saying so, or ""."""
        if self.design.fold or blocks >= self.max_blocks:
            return ""
        chain = next(((n, found) for n, found in self.significant.items() if found[0].aliases), None)
        if chain is None:
            return ""
        name, found = chain
        lever = min(self._involved(found[0]), key=self.design.factors.index)
        self.design = folded(self.design, LETTERS[self.design.factors.index(lever)], blocks + 1)
        self.unsplit[name] = self.significant.pop(name)
        said = " = ".join(x.replace("×", " × ") for x in (name, *found[0].aliases))
        return (f"{said}: an alias chain, significant; folding the design over on {lever} from block {blocks + 1} "
                "to tell which pair interacts")

    def _split(self) -> None:
        """After a fold's look: a chain whose pair a look named is let go; one whose members none is significant
        yet stays held whole, as the fraction alone held it."""
        for name, (chain, low, high) in list(self.unsplit.items()):
            del self.unsplit[name]
            levers = self._involved(chain)
            if not any(set(e.levers) <= levers for e, _, _ in self.significant.values()):
                self.significant.setdefault(name, (chain, low, high))

    def _involved(self, e: Effect) -> set[str]:
        """The levers of an interaction and of every interaction aliased with it: a fraction cannot say which."""
        out = set(e.levers)
        for alias in e.aliases:
            out.update(alias.split("×"))
        return out

    def _speed(self, main: Effect, low: float | None, high: float | None) -> str:
        if low is None or high is None:
            return f"{main.name} {ratio_text(main.ratio)}×"
        return f"{main.name} {ratio_text(main.ratio)}× [{ratio_text(low)}, {ratio_text(high)}]"

    def _waiting(self, lever: str, blocks: int) -> LeverCall:
        return LeverCall(lever, "inconclusive", f"block {blocks} of the {self.first} a first look needs", None, None)

    def _settled(self, call: LeverCall, main: Effect, blocks: int) -> LeverCall:
        """An undecided lever at the end of the budget, with the blocks that would likely settle it: those whose
        precision puts the threshold as far as the estimate is from it at the whole budget's error."""
        from scipy import stats

        threshold = self.rules[call.lever].min_speedup
        gap = abs(math.log(main.ratio / threshold))
        z = float(stats.norm.ppf(1 - ALPHA))
        if main.log_se <= 0 or gap < max(0.25 * main.log_se, 1e-9):
            more, tail = 0, ": it lies at its threshold; no number of blocks is likely to settle it"
        else:
            need = blocks * (z * main.log_se / gap) ** 2
            more = max(1, math.ceil(need - blocks))
            tail = f"; about {_blocks(more)} more would likely settle it"
        return LeverCall(call.lever, "inconclusive", call.reason + tail, call.low, call.high, more)

    def _step(self, more: int, result: Fit | None, calls: dict[str, LeverCall], note: str) -> ScreenStep:
        effects = tuple(e for e, _, _ in self.significant.values())
        said = tuple(interaction_sentence(e, lo, hi) for e, lo, hi in self.significant.values())
        confirm = self._best(result) if result is not None and effects else ()
        return ScreenStep(more, result, calls, effects, said, confirm, note)

    def _best(self, result: Fit) -> tuple[str, ...]:
        """The subset of the held levers with the highest fitted speed (its interactions included), others off."""
        held = sorted({lever for e, _, _ in self.significant.values() for lever in self._involved(e)},
                      key=self.design.factors.index)
        logs = {e.name: math.log(e.ratio) for e in result.mains + result.interactions}
        best: tuple[str, ...] = ()
        best_log = -math.inf
        for r in range(1, len(held) + 1):
            for combo in itertools.combinations(held, r):
                on = set(combo)
                # ±1 coding: main β = log ratio / 2, interaction β = log ratio of ratios / 4
                x = {f: (1 if f in on else -1) for f in self.design.factors}
                total = sum(x[f] * logs[f] / 2 for f in self.design.factors)
                total += sum(x[e.levers[0]] * x[e.levers[1]] * logs[e.name] / 4 for e in result.interactions)
                if total > best_log:
                    best, best_log = combo, total
        return best


def _blocks(n: int) -> str:
    return f"{n} block{'s' * (n != 1)}"
