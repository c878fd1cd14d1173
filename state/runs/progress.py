"""A run's progress over all its passes, as one count that never goes backwards, and p as both front ends print it.

A lever command reports `done/total` of the pass under way; a run that stays inconclusive asks
further passes up to its rule's `max_repeats`. Shown per pass, a bar would fill, drop back to a
fraction and fill again. Here each pass adds to what the earlier ones did, against the rule's whole
budget when the command counts in pairs (an experiment: in blocks, or in units a block holds a fixed
number of), else against what has been asked so far.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class RunProgress:
    repeats: int | None = None
    """What the run asks of pass 1; a pass 1 total equal to it means the command counts pairs."""
    budget: int | None = None
    """The rule's `max_repeats`: the most pairs all passes together may ask."""
    pass_no: int = 1
    pass_done: float = 0
    pass_total: float = 0
    earlier_done: float = 0
    """Done in the passes before this one."""
    earlier_total: float = 0
    done: float = 0
    total: float = 0
    in_pairs: bool = False
    """The command counts pairs (its pass 1 total is the rule's `repeats`), so the budget is the bar's end."""
    started: bool = False
    """True once anything (a sample, a progress line) came from the command."""

    per_repeat: float = 0
    """Units the command counts per pair (1) or, in an experiment, per block; 0 while unknown."""
    blocks: bool = False
    """An experiment's rule: its repeats are blocks of every config, and its passes ask whole blocks."""

    launches: bool = False
    """An A/B run over launches: each pass is one, and the text names it so."""
    first_look: int = 0
    """Pairs the run asks before it can decide (its first look: launches × pairs a launch); 0 when unknown."""

    @classmethod
    def of(cls, lever) -> "RunProgress":
        from optseq.state.runs.passes import first_request, replicate_of

        rule = getattr(lever, "rule", None)
        if rule is None:
            return cls()
        from optseq.state.runs.passes import ABPasses

        blocks = bool(getattr(rule, "choose", None))
        launches = not blocks and replicate_of(lever) == "launch"
        first_look = 0
        if launches and getattr(lever, "kind", None) != "experiment":
            passes = ABPasses(rule, "launch")
            first_look = passes.plan.first * passes.requested if passes.plan is not None else 0
        return cls(repeats=first_request(lever), budget=getattr(rule, "max_repeats", None), blocks=blocks,
                   launches=launches, first_look=first_look)

    def sample(self, event: dict) -> None:
        """A sample: lever_run tags it with its pass (`run`), which is how a new pass is seen first."""
        self.started = True
        tag = event.get("run")
        if isinstance(tag, int) and tag > self.pass_no:
            self._next_pass(tag)

    def progress(self, done, total) -> None:
        self.started = True
        done = float(done) if isinstance(done, (int, float)) else 0.0
        total = float(total) if isinstance(total, (int, float)) and total > 0 else 0.0
        if done < self.pass_done:  # the count restarted without a sample first: a new pass
            self._next_pass(self.pass_no + 1)
        self.pass_done, self.pass_total = done, max(total, done)
        self._update()

    def _next_pass(self, pass_no: int) -> None:
        self.earlier_done += self.pass_done
        self.earlier_total += self.pass_total or self.pass_done
        self.pass_no, self.pass_done, self.pass_total = pass_no, 0.0, 0.0

    def _update(self) -> None:
        asked = self.earlier_total + self.pass_total
        if self.pass_no == 1 and self.budget and self.repeats and self.pass_total:
            # A pass 1 total of `repeats` counts pairs (or blocks). An experiment counting finer units (its
            # iterations) asks whole blocks each pass, so a multiple of `repeats` scales the budget with it.
            # A speedup command's other count (steps, say) may not grow with pairs: no budget for it.
            if self.pass_total == self.repeats:
                self.per_repeat = 1
            elif self.blocks and self.pass_total % self.repeats == 0:
                self.per_repeat = self.pass_total / self.repeats
            else:
                self.per_repeat = 0
            self.in_pairs = self.per_repeat == 1 and not self.blocks
        target = max(asked, float(self.budget) * self.per_repeat) if self.per_repeat and self.budget else asked
        # neither figure may move back: a late, smaller total from a command is not a step back in time
        self.total = max(self.total, target)
        self.done = min(max(self.done, self.earlier_done + self.pass_done), self.total)

    def message(self, msg) -> str:
        """The command's own progress message, unless it only repeats the count (`pair 3`, `pair 3/6`)."""
        msg = str(msg or "")
        return "" if self.in_pairs and re.fullmatch(r"pair \d+(/\d+)?", msg.strip()) else msg

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None

    def text(self) -> str:
        """`pair 3 of 12 · launch 2`, `pair 7 of 8 (budget 12) · pass 2`, `block 2 of 12`, or `48/192` when the
        command counts something else. Pairs are counted against what the run plans to ask before it can decide
        (its first look, or what its passes asked since), the rule's budget beside it when that is more."""
        if not self.total:
            return ""
        passes = f" · {'launch' if self.launches else 'pass'} {self.pass_no}" if self.pass_no > 1 else ""
        if self.in_pairs:
            planned = min(max(self.first_look, self.earlier_total + self.pass_total), self.total)
            budget = f" (budget {self.total:g})" if planned < self.total else ""
            return f"pair {self.done:g} of {planned:g}{budget}{passes}"
        if self.blocks and self.per_repeat == 1:
            return f"block {self.done:g} of {self.total:g}{passes}"
        if self.blocks and self.per_repeat:  # the command counts steps (iterations, evaluations) of its blocks
            return f"step {self.done:g} of {self.total:g} ({self.total / self.per_repeat:g} blocks){passes}"
        return f"{self.done:g}/{self.total:g}{passes}"


def p_text(p: float | None) -> str:
    """A p-value as every front end prints it: two significant digits, `<0.001` below that."""
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.2g}"
