"""The commit gate's rule: `optseq compare BASE HEAD` is an A/B run whose arms are two commits of one workload.

HEAD is the candidate, BASE the baseline; the ratio is HEAD's speed over BASE's (a time metric inverted, as every
A/B ratio is). "Slower by more than the tolerance t" is a ratio below 1 / (1 + t): HEAD takes more than (1 + t)
times BASE's time. So the gate is the lever rule with `min_speedup = 1 / (1 + t)`, and its verdicts are the rule's
under other names: the lower bound clears the threshold (the rule's adopt) is `not slower`, the upper bound lies
below it (reject) is `slower`, anything else `inconclusive`. The rule's guarantee carries over word for word:
at a true slowdown equal to the tolerance, P(`not slower`) stays within 5% over all the run's looks, and so
does P(`slower`) at a true ratio on the threshold's other side.
"""
from __future__ import annotations

from optseq.state.kinds import CompareVerdict
from optseq.state.plan.compare import MAX_TOLERANCE, ToleranceError, parse_tolerance  # noqa: F401 (the gate's words)
from optseq.state.plan.model import Guard, Rule

DEFAULT_TOLERANCE = 0.05
"""A slowdown this small passes the gate when `--tolerance` and the plan's `[compare] tolerance` are silent."""
DEFAULT_REPEATS = 10
"""Pairs of arm runs the first pass measures (each arm run its own process: the pair of launches is the unit)."""
DEFAULT_MAX_REPEATS = 160
"""Pairs a compare may extend to before it says inconclusive: 10, 20, 40, 80, 160 at five looks."""

EXIT: dict[str, int] = {CompareVerdict.NOT_SLOWER: 0, CompareVerdict.SLOWER: 1, CompareVerdict.INCONCLUSIVE: 3,
                        CompareVerdict.FAILED: 4, CompareVerdict.GUARD: 5}
"""`optseq compare`'s exit code per verdict (2 is bad input, 130 Ctrl-C, as for every command)."""


def threshold(tolerance: float) -> float:
    """The ratio (HEAD's speed over BASE's) below which HEAD is slower by more than the tolerance."""
    return 1.0 / (1.0 + tolerance)


def rule(metric: str, tolerance: float, repeats: int = DEFAULT_REPEATS, max_repeats: int = DEFAULT_MAX_REPEATS,
         guards: tuple[Guard, ...] = ()) -> Rule:
    """The A/B rule a compare runs: the lever rule at the tolerance's threshold."""
    return Rule(metric, min_speedup=threshold(tolerance), guards=tuple(guards), repeats=repeats,
                max_repeats=max(max_repeats, repeats))


def verdict_of(outcome: str, guard_failed: bool = False) -> CompareVerdict:
    """The gate's verdict for the rule's outcome; a failed guard is its own verdict, whatever the speed."""
    return CompareVerdict.of(outcome, guard_failed)


def tolerance_text(tolerance: float) -> str:
    """`3%`, `2.5%`: as a person writes it."""
    return f"{tolerance * 100:.4g}%"
