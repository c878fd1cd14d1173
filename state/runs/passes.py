"""Between the passes of an A/B run: count what came back, judge it, and ask for more pairs or stop.

The lever run (launching real commands) and the decision-quality simulation (drawing numbers) both
go through this one class, so the error rates the simulation measures are those of real runs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from optseq.state.plan.model import Rule
from optseq.state.runs.pairs import PairBook

MAX_PASSES = 12
"""A run launches its command at most this often: doubling from `repeats` reaches any budget well before."""


@dataclass(frozen=True)
class Step:
    """What to do after a pass."""

    more: int
    """Pairs (or blocks) to ask the next pass for; 0 = stop."""
    counts: dict[str, Any]
    """This pass for the run record: asked, counted, warnings."""
    warnings: tuple[str, ...] = ()
    stats: Any = None
    """A/B: PairedStats after this pass (None when the pass counted nothing)."""
    verdict: Any = None
    """A/B: the rule's Verdict after this pass."""
    result: Any = None
    """Experiments: the BestOf comparison after this pass."""
    failure: str | None = None
    """Why the run fails: the pass brought nothing countable."""
    error: str | None = None
    """Samples the statistics could not use (a one-line StatsError): the run stands, undecided."""
    note: str = ""
    """One line for the log: why it asks for more, or why it stops undecided."""


class ABPasses:
    """One A/B run's passes: the pair book, the sequential statistics, the rule's verdict, the next request."""

    def __init__(self, rule: Rule):
        self.rule = rule
        self.book = PairBook(rule.metric)
        self.requested = rule.repeats
        """Pairs the coming pass is asked for."""
        self.passes = 0

    def after_pass(self, samples: Iterable[Mapping[str, Any]], qualities: Iterable[Mapping[str, Any]] = (), *,
                   elapsed_s: float | None = None, timeout_s: float | None = None,
                   cancelled: bool = False) -> Step:
        """Count a finished pass's samples (tagged with its pass number) and decide what comes next."""
        from optseq.state.runs.decide_rule import decide, more_pairs
        from optseq.state.runs.stats import summarise

        self.passes += 1
        report = self.book.add_pass(self.passes, samples, self.requested)
        base = {"counts": report.to_dict(), "warnings": tuple(report.notes())}
        if report.counted == 0:
            return Step(0, **base, failure=self.book.nothing_counted(report))
        rule = self.rule
        stats = summarise(self.book, budget=rule.max_repeats, threshold=rule.min_speedup)
        verdict = decide(stats, rule, qualities)
        if verdict.outcome != "inconclusive" or cancelled:
            return Step(0, **base, stats=stats, verdict=verdict)
        more = more_pairs(stats, rule, stats.n)
        if more <= 0:
            return Step(0, **base, stats=stats, verdict=verdict)
        why = _no_more(self.passes, report.asked, report.counted, stats.n, more, elapsed_s, timeout_s, "pair")
        if why:
            return Step(0, **base, stats=stats, verdict=replace(verdict, reason=f"{verdict.reason}; stopped: {why}"),
                        note=f"inconclusive after {_count(stats.n, 'pair')}; not asking for more: {why}")
        self.requested = more
        return Step(more, **base, stats=stats, verdict=verdict,
                    note=f"inconclusive after {_count(stats.n, 'pair')} ({verdict.reason}); asking for {more} more")


class BlockPasses:
    """One experiment's passes: blocks of every config, compared by best_of, and the next request."""

    def __init__(self, rule: Rule):
        self.rule = rule
        self.requested = rule.repeats
        self.passes = 0
        self.asked = 0
        self.blocks = 0
        """Complete blocks after the last pass."""

    def after_pass(self, samples: Iterable[Mapping[str, Any]], qualities: Iterable[Mapping[str, Any]] = (), *,
                   elapsed_s: float | None = None, timeout_s: float | None = None,
                   cancelled: bool = False) -> Step:
        """Compare every pass's samples so far (tagged with their pass) and decide what comes next."""
        from optseq.state.runs.best_of import best_of, more_blocks
        from optseq.state.runs.stats import StatsError

        self.passes += 1
        self.asked += self.requested
        try:
            result = best_of(samples, self.rule, qualities)
        except StatsError as exc:
            return Step(0, {"pass": self.passes, "asked": self.requested, "blocks": None}, error=str(exc))
        added, self.blocks = result.blocks - self.blocks, result.blocks
        counts = {"pass": self.passes, "asked": self.requested, "blocks": added,
                  "warnings": [f"pass {self.passes}: {w}" for w in result.warnings]}
        base = {"counts": counts, "warnings": tuple(counts["warnings"]), "result": result}
        if added <= 0 and result.outcome == "inconclusive" and result.rows:
            return Step(0, **base, failure=f"pass {self.passes} added no complete block of {result.metric}: "
                                           f"{result.reason}")
        if added <= 0 and not result.rows:
            return Step(0, **base, failure=f"pass {self.passes} gave no sample of {result.metric}, the rule's "
                                           f"metric")
        more = more_blocks(result, self.rule, self.asked)
        if result.outcome != "inconclusive" or cancelled or more <= 0:
            return Step(0, **base)
        why = _no_more(self.passes, self.requested, added, self.asked, more, elapsed_s, timeout_s, "block")
        if why:
            return Step(0, **base, note=f"inconclusive after {_count(result.blocks, 'block')}; not asking for "
                                        f"more: {why}")
        self.requested = more
        return Step(more, **base, note=f"inconclusive after {_count(result.blocks, 'block')} ({result.reason}); "
                                       f"asking for {more} more")


def _no_more(passes: int, asked: int | None, counted: int, done: int, more: int, elapsed_s, timeout_s,
             unit: str) -> str | None:
    """Why an undecided run should not launch another pass, or None."""
    if passes >= MAX_PASSES:
        return f"{MAX_PASSES} passes"
    if asked and counted * 2 < asked:
        # a command that brings a fraction of what it is asked for will do so again
        return f"asked for {_count(asked, unit)}, {counted} counted"
    if elapsed_s is not None and timeout_s is not None and elapsed_s / done * (done + more) > timeout_s:
        return (f"{_count(more, unit)} more would not fit in timeout_s = {timeout_s:g} s at "
                f"{elapsed_s / done:.3g} s a {unit}")
    return None


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'s' * (n != 1)}"
