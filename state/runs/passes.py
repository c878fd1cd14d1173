"""Between the passes of an A/B run: count what came back, judge it, and ask for more pairs or stop.

The lever run (launching real commands) and the decision-quality simulation (drawing numbers) both
go through this one class, so the error rates the simulation measures are those of real runs.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from optseq.state.said import say, text
from optseq.state.plan.model import Rule
from optseq.state.runs.launches import (PILOT_LAUNCHES, LaunchPlan, Split, launch_plan, pairs_per_launch, settle,
                                        share_above, split)
from optseq.state.runs.pairs import PairBook
from optseq.state.runs.words import WORDS
from optseq.state.text import ratio_text

MAX_PASSES = 12
"""A run over pairs launches its command at most this often: doubling from `repeats` reaches any budget well
before. A run over launches stops at its launch budget."""


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
    split: Any = None
    """A/B over launches: the variance split and costs measured so far (launches.Split), once there is one."""


def replicate_of(lever) -> str:
    """What a lever's sign test counts: a command-pair lever runs every arm as its own process, so its pairs are
    independent draws; a bench measures its pairs inside one process, which gives them all that launch's speed."""
    return "pair" if getattr(lever, "arms", None) is not None else "launch"


def first_request(lever) -> int | None:
    """Pairs (or blocks) the first pass of a lever's run asks for; None without a rule."""
    rule = lever.rule
    if rule is None:
        return None
    if lever.kind == "experiment" or rule.choose:
        return rule.repeats
    return ABPasses(rule, replicate_of(lever)).requested


def asks(lever) -> str:
    """What a run of this lever asks for, in one phrase: `6 launches of up to 2 pairs before it can decide, ...`."""
    rule = lever.rule
    if rule is None:
        return "one pass"
    if rule.choose:
        return f"{rule.repeats} blocks a pass, up to {rule.max_repeats}"
    passes = ABPasses(rule, replicate_of(lever))
    if passes.plan is None:
        return f"{rule.repeats} pairs, up to {rule.max_repeats} if inconclusive; each arm run its own process"
    plan = passes.plan
    if not plan.decidable:
        return (f"a budget of {plan.budget} launches, too few for any decision: raise max_repeats or max_launches "
                f"to {sequential_floor()}")
    # the run stops at whichever budget is spent first, launches or pairs: `up to 18 launches and 18 pairs` after
    # 6 launches of 3 pairs promised launches the pairs left no room for; say what is left after the first look
    first = f"{plan.first} launches of up to {passes.requested} pairs before it can decide"
    left = rule.max_repeats - plan.first * passes.requested
    launches = min(plan.budget - plan.first, left)  # a launch counts a pair at least
    if left <= 0:
        return f"{first}: its {rule.max_repeats}-pair budget, all at the first look"
    if launches <= 0:
        return f"{first}: its {plan.budget}-launch budget, all at the first look"
    pairs, more = ("pair" if left == 1 else "pairs"), ("launch" if launches == 1 else "launches")
    return f"{first}; if inconclusive, up to {left} more {pairs} in up to {launches} more {more}"


def first_look(rule: Rule, replicate: str) -> tuple[str, str] | None:
    """The rule's key at fault and why its first look cannot decide, in one phrase (`optseq validate` warns of it);
    None when it can.

    Over pairs the first look comes after `repeats` of them, and under a budget of `max_repeats` the sign test needs
    some number of them all on one side: fewer, and every run measures a second pass before anything is said. Over
    launches the first look is chosen to decide; only a budget too small for any decision is left to say."""
    from optseq.state.runs.sequential import design, first_decidable

    if replicate == "launch":
        plan = launch_plan(rule)
        return None if plan.decidable else ("max_launches" if rule.max_launches else "max_repeats",
                                            f"a budget of {plan.budget} launches is too few for any decision: raise "
                                            f"max_repeats or max_launches to {sequential_floor()}")
    budget = rule.max_repeats
    if design((rule.repeats,), budget).needed[0] <= rule.repeats:
        return None
    need = first_decidable(budget)
    if need > budget:
        return ("max_repeats", f"no look can decide: under a budget of {budget} pairs (max_repeats) the sign test "
                               f"needs {need} all on one side; raise max_repeats")
    return ("repeats", f"{rule.repeats} pairs cannot decide at the first look: under a budget of {budget} pairs "
                       f"(max_repeats) the sign test needs {need} all on one side, so every run measures a second "
                       f"pass; repeats = {need} decides at the first")


def sequential_floor() -> int:
    """The fewest launches any budget can decide with (the sign test at one look, all of them on one side)."""
    from optseq.state.runs.sequential import first_decidable

    n = 1
    while first_decidable(n) > n:
        n += 1
    return n


class ABPasses:
    """One A/B run's passes: the pair book, the sequential statistics, the rule's verdict, the next request.

    Each pass is one launch of the command. With replicate="launch" (a bench that measures its pairs inside
    one process) the sign test counts launches, and each launch after the first PILOT_LAUNCHES asks for the
    pairs Kalibera & Jones's optimum gives from the variance split and the costs measured so far; with "pair"
    (every arm run its own process, as optseq runs command-pair levers) it counts pairs, and an undecided run
    doubles its pairs up to the budget.
    """

    def __init__(self, rule: Rule, replicate: str = "launch"):
        self.rule = rule
        self.replicate = replicate
        self.book = PairBook(rule.metric)
        self.plan = launch_plan(rule) if replicate == "launch" else None
        self.requested = rule.repeats if self.plan is None else max(1, min(self._most(), rule.max_repeats //
                                                                          self.plan.first))
        """Pairs the coming pass is asked for."""
        self.passes = 0
        self.timings: list[tuple[int, float | None, float | None]] = []
        """Per pass: pairs counted, seconds in all, seconds a pair (None where unknown)."""
        self.split: Split | None = None

    @property
    def budget(self) -> int:
        return self.plan.budget if self.plan is not None else self.rule.max_repeats

    def after_pass(self, samples: Iterable[Mapping[str, Any]], qualities: Iterable[Mapping[str, Any]] = (), *,
                   elapsed_s: float | None = None, timeout_s: float | None = None, cancelled: bool = False,
                   token: str | None = None, duration_s: float | None = None, pair_s: float | None = None) -> Step:
        """Count a finished pass's samples (tagged with its pass number) and decide what comes next.

        `token` is the launch token the pass was given; `duration_s` and `pair_s` what its launch took in all
        and per pair, for the allocation of the next launch's pairs.
        """
        from optseq.state.runs.decide_rule import decide, more_pairs, one_arm_first
        from optseq.state.runs.stats import summarise

        self.passes += 1
        report = self.book.add_pass(self.passes, samples, self.requested, token=token)
        counts, warnings = report.to_dict(), tuple(report.notes())
        if report.counted == 0:
            return Step(0, counts, warnings, failure=self.book.nothing_counted(report))
        self.timings.append((report.counted, duration_s, pair_s))
        rule = self.rule
        stats = summarise(self.book, budget=self.budget, threshold=rule.min_speedup, replicate=self.replicate)
        verdict = decide(stats, rule, qualities)
        measured = None
        if self.plan is not None:
            self.split = measured = split(self._groups(), self.timings)
        if verdict.outcome != "inconclusive" or cancelled or one_arm_first(stats):
            return Step(0, counts, warnings, stats=stats, verdict=verdict, split=measured)
        if self.plan is None:
            more = more_pairs(stats, rule, stats.n)
            done, unit = stats.n, "pair"
        else:
            more = self._next_launch(stats, self.plan)
            done, unit = stats.launches, "launch"
        if more <= 0:
            return Step(0, counts, warnings, stats=stats, verdict=self._settled(stats, verdict), split=measured)
        why = _no_more(self.passes, report.asked, report.counted, done, 1 if self.plan else more, elapsed_s,
                       timeout_s, unit, max_passes=self.budget if self.plan else MAX_PASSES, asked_unit="pair")
        if why:
            return Step(0, counts, warnings, stats=stats, verdict=self._settled(stats, verdict, why), split=measured,
                        note=f"inconclusive after {_so_far(stats)}; not asking for more: {text(why, 'en', WORDS)}")
        self.requested = more
        if self.plan is None:
            note = f"inconclusive after {_so_far(stats)} ({verdict.reason}); asking for {more} more"
        else:
            chosen = self.split is not None and self.passes >= PILOT_LAUNCHES and not self.rule.pairs_per_launch
            ask = self.split.text(more) if chosen and self.split is not None else _count(more, "pair")
            if stats.launches < self.plan.first:
                # a launch counted pairs (no pass gets here without): the estimate is there
                so_far = (f"launch {stats.launches} of the {self.plan.first} a first look needs "
                          f"({ratio_text(stats.estimate or math.nan, 3)}× so far)")
            else:
                so_far = f"inconclusive after {_so_far(stats)} ({verdict.reason})"
            note = f"{so_far}; next launch: {ask}"
        return Step(more, counts, warnings, stats=stats, verdict=verdict, note=note, split=measured)

    def _groups(self) -> list[list[float]]:
        """Each launch's pairs as log ratios."""
        groups: dict[Any, list[float]] = {}
        for pair, ratio in zip(self.book.pairs, self.book.ratios()):
            groups.setdefault(pair.run, []).append(math.log(ratio))
        return list(groups.values())

    def _next_launch(self, stats, plan: LaunchPlan) -> int:
        """Pairs for the next launch; 0 once the launch or pair budget is spent or the bounds decide."""
        rule = self.rule
        left = rule.max_repeats - stats.n
        if stats.launches >= plan.budget or left <= 0:
            return 0
        if stats.ci_low is not None and (stats.ci_low > rule.min_speedup or stats.ci_high < rule.min_speedup):
            return 0  # a guard, not the statistics, holds it back: more launches do not cure that
        # before the first look every launch it needs must still fit in the pair budget
        cap = min(self._most(), left // max(plan.first - stats.launches, 1), left)
        if cap < 1:
            return 0
        if rule.pairs_per_launch or self.passes < PILOT_LAUNCHES:
            return cap
        return pairs_per_launch(self.split, cap)

    def _most(self) -> int:
        """Pairs a launch asks for at most: the rule's own launch size where it sets one, else `repeats`."""
        return self.rule.pairs_per_launch or self.rule.repeats

    def _settled(self, stats, verdict, why: dict | None = None):
        """The verdict of a run that stops undecided, with what would likely settle it (`why` it stopped: a said
        of runs/words, as _no_more gives it). Its said keeps the verdict's where the rule's reason was its own."""
        from optseq.state.runs.stats import UNITS

        stopped = say("stopped", why=why) if why else ""
        tail: dict | str = ""
        straddles = stats.ci_low is None or stats.ci_low <= self.rule.min_speedup <= stats.ci_high
        if stats.above is not None and verdict.outcome == "inconclusive" and straddles:
            # settle counts sign-test units: launches of a bench, or pairs where every arm run is a process
            extra = settle(stats.above, stats.below, share=share_above(stats.units, self.rule.min_speedup))
            unit = stats.replicate
            if extra is None:
                tail = say("evenly", units=say(UNITS[unit]))
            else:
                arms = say("arms_launches", n=2 * extra) if unit == "pair" else ""
                tail = say("settle", extra=extra, units=say(UNITS[unit] if extra != 1 else unit), arms=arms)
        reason = verdict.reason + "".join(text(part, "en", WORDS) for part in (stopped, tail)
                                          if isinstance(part, dict))
        said = None
        if verdict.said is not None and text(verdict.said, "en", WORDS) == verdict.reason:
            said = say("settled", verdict=verdict.said, stopped=stopped, tail=tail)
        return replace(verdict, reason=reason, said=said)


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
        said = [f"pass {self.passes}: {w}" for w in result.warnings]
        counts = {"pass": self.passes, "asked": self.requested, "blocks": added, "warnings": said}
        warnings = tuple(said)
        if added <= 0 and result.outcome == "inconclusive" and result.rows:
            return Step(0, counts, warnings, result=result,
                        failure=f"pass {self.passes} added no complete block of {result.metric}: {result.reason}")
        if added <= 0 and not result.rows:
            return Step(0, counts, warnings, result=result,
                        failure=f"pass {self.passes} gave no sample of {result.metric}, the rule's metric")
        more = more_blocks(result, self.rule, self.asked)
        if result.outcome != "inconclusive" or cancelled or more <= 0:
            return Step(0, counts, warnings, result=result)
        why = _no_more(self.passes, self.requested, added, self.asked, more, elapsed_s, timeout_s, "block")
        if why:
            return Step(0, counts, warnings, result=result, note=f"inconclusive after "
                        f"{_count(result.blocks, 'block')}; not asking for more: {text(why, 'en', WORDS)}")
        self.requested = more
        return Step(more, counts, warnings, result=result, note=f"inconclusive after {_count(result.blocks, 'block')} ({result.reason}); "
                                       f"asking for {more} more")


def _no_more(passes: int, asked: int | None, counted: int, done: int, more: int, elapsed_s, timeout_s,
             unit: str, max_passes: int = MAX_PASSES, asked_unit: str | None = None) -> dict | None:
    """Why an undecided run should not launch another pass (a said of runs/words), or None. `done` and `more`
    count `unit`s (pairs, blocks or launches); `asked` and `counted`, this pass's `asked_unit`s (the same unless
    told)."""
    if passes >= max_passes:
        return say("max_passes", n=max_passes)
    if asked and counted * 2 < asked:
        # a command that brings a fraction of what it is asked for will do so again
        return say("fraction", asked=_counted(asked, asked_unit or unit), counted=counted)
    if elapsed_s is not None and timeout_s is not None and elapsed_s / done * (done + more) > timeout_s:
        return say("no_fit", more=_counted(more, unit), timeout=f"{timeout_s:g}", each=f"{elapsed_s / done:.3g}",
                   unit=say(unit))
    return None


def _counted(n: int, unit: str) -> dict:
    """`n unit(s)` as a said: the English plural, the Korean counter."""
    plural = {"launch": "launches", "pair": "pairs", "block": "blocks"}[unit]
    return say("count", n=n, unit=say(unit if n == 1 else plural))


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'es' if unit == 'launch' and n != 1 else 's' * (n != 1)}"


def _so_far(stats) -> str:
    pairs = _count(stats.n, "pair")
    return f"{_count(stats.launches, 'launch')} ({pairs})" if stats.replicate == "launch" else pairs
