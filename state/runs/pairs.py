"""Pair accounting: which samples of a lever's passes make counted A/B pairs, and what the command got wrong.

optseq asks each pass for a number of pairs and checks what came back before any statistics: a
second sample for one arm and pair index, a metric whose direction flips, or a non-positive value is
reported in one line and never counted. A replay is caught by what the command was told, never by
equal values (a bench that rounds its output repeats honest numbers): a sample carrying another
launch's token (OPTSEQ_LAUNCH, echoed by the lever kit), or, for a command that echoes none, a whole
pass that repeats an earlier one value for value.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

BASELINE, CANDIDATE = "baseline", "candidate"


@dataclass(frozen=True)
class Pair:
    run: Any
    """The pass it came from (the `run` tag of its samples)."""
    pair: int
    baseline: float
    candidate: float
    baseline_first: bool | None = None
    """Whether the baseline ran first in this pair: as the bench says (the kit's `first`), else as its samples
    came (`emitted`)."""
    emitted: bool = False
    """The order is the emission order: the bench said nothing of which arm ran first, and a bench writes a value
    when it has measured it, so the arm whose sample came first is taken to have run first."""


@dataclass
class PassReport:
    """What one pass brought: pairs counted, and one warning line per kind of trouble with the rest."""

    pass_no: Any
    asked: int | None
    counted: int = 0
    reported: dict[str, dict[str, int]] = field(default_factory=dict)
    """metric -> arm -> samples, everything the pass reported, for the message when nothing counted."""
    fresh: list[Pair] = field(default_factory=list)
    """The pairs it counts (or, in a preview, would count)."""
    troubles: dict[str, list[str]] = field(default_factory=dict)
    """kind -> one example per occurrence, in the order they came."""
    notes_after: list[str] = field(default_factory=list)
    higher_is_better: bool | None = None
    """The metric's direction as this pass's samples give it (a preview's, before the book keeps one)."""

    def trouble(self, kind: str, example: str) -> None:
        self.troubles.setdefault(kind, []).append(example)

    def notes(self) -> list[str]:
        """One line per kind: how many, the first few examples, what optseq did about it."""
        lines = []
        for kind, examples in self.troubles.items():
            shown = "; ".join(examples[:MAX_EXAMPLES]) + ("; ..." if len(examples) > MAX_EXAMPLES else "")
            lines.append(f"pass {self.pass_no}: {TROUBLES[kind].format(n=len(examples), s='s' * (len(examples) != 1), ind='index' if len(examples) == 1 else 'indices')}"
                         f" ({shown}): not counted")
        return lines + [f"pass {self.pass_no}: {note}" for note in self.notes_after]

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.pass_no, "asked": self.asked, "pairs": self.counted, "warnings": self.notes()}


MAX_EXAMPLES = 3
MIN_REPLAY = 3
"""Pairs a pass must repeat, value for value, to be taken for a replay: two can coincide in rounded output."""
TROUBLES = {
    "malformed": "{n} malformed sample{s}",
    "direction": "{n} sample{s} with the other higher_is_better",
    "duplicate": "{n} repeated pair {ind}",
    "half": "{n} pair{s} with one arm only",
    "value": "{n} pair{s} with a value that is not positive and finite",
    "stale": "{n} sample{s} from another launch (its OPTSEQ_LAUNCH token is not this pass's), a replay of saved "
             "output",
    "replay": "a replay: the pass repeats an earlier one value for value (does the command vary its seed and "
              "honour OPTSEQ_PASS?)",
}
"""Each kind of trouble, as its warning line says it."""


class PairBook:
    """The counted pairs of one metric over a run's passes, in the order they came."""

    def __init__(self, metric: str):
        self.metric = metric
        self.pairs: list[Pair] = []
        self.looks: list[int] = []
        """Cumulative counted pairs after each pass that added any: the looks of the sequential test."""
        self.higher_is_better: bool | None = None
        self.unit = ""
        self.dropped = 0
        """Samples of this metric not counted, over all passes."""
        self.reports: list[PassReport] = []
        self._passes: list[tuple[Any, tuple[tuple[float, float], ...]]] = []
        """Each counted pass's values in pair order, to tell a replayed pass from honest repeats."""

    def add_pass(self, pass_no: Any, samples: Iterable[Mapping[str, Any]], asked: int | None = None,
                 commit: bool = True, token: str | None = None) -> PassReport:
        """Count one pass's samples; with commit=False only report (a live preview of a pass under way).

        `token` is the pass's launch token (OPTSEQ_LAUNCH): a sample that carries another is not this
        launch's. A command that echoes no token and gives back, pair for pair, the values of an earlier
        pass (at least MIN_REPLAY pairs that vary) has replayed it: the pass counts nothing.
        """
        report = PassReport(pass_no, asked)
        halves: dict[int, dict[str, float]] = {}
        firsts: dict[int, bool] = {}
        came: dict[int, bool] = {}
        """pair -> whether its baseline's sample came before its candidate's (the emission order)."""
        order: list[int] = []
        direction = self.higher_is_better
        unit = self.unit
        mine = 0
        for i, s in enumerate(samples):
            metric, arm = s.get("metric"), s.get("arm")
            if isinstance(metric, str) and isinstance(arm, str):
                arms = report.reported.setdefault(metric, {})
                arms[arm] = arms.get(arm, 0) + 1
            if metric != self.metric or arm not in (BASELINE, CANDIDATE):
                continue
            mine += 1
            launch = s.get("launch")
            if token is not None and launch is not None and launch != token:
                report.trouble("stale", f"{arm} pair {s.get('pair')!r} carries launch {str(launch)[:16]!r}")
                continue
            value, pair, higher = s.get("value"), s.get("pair"), s.get("higher_is_better", True)
            if not _number(value) or not _index(pair) or not isinstance(higher, bool):
                report.trouble("malformed", f"sample #{i}: value {value!r}, pair {pair!r}")
                continue
            if direction is None:
                direction = higher
            elif higher != direction:
                report.trouble("direction", f"{arm} pair {pair} says {str(higher).lower()}, earlier samples of "
                                            f"{metric} {str(direction).lower()}")
                continue
            unit = unit or str(s.get("unit") or "")
            slot = halves.setdefault(pair, {})
            if arm in slot:
                report.trouble("duplicate", f"a second {arm} {float(value):g} for pair {pair}; the first, "
                                            f"{slot[arm]:g}, counts")
                continue
            if not slot:
                order.append(pair)
                came[pair] = arm == BASELINE
            slot[arm] = float(value)
            said = s.get("first")
            if isinstance(said, bool) and (arm == BASELINE or pair not in firsts):
                # the baseline's word, else the candidate's: one arm's is enough, the other ran second
                firsts[pair] = said if arm == BASELINE else not said
        fresh: list[Pair] = []
        for pair in order:
            slot = halves[pair]
            if len(slot) < 2:
                (arm, value), = slot.items()
                report.trouble("half", f"pair {pair} has {arm} {value:g}")
                continue
            base, cand = slot[BASELINE], slot[CANDIDATE]
            if not (base > 0 and cand > 0):
                report.trouble("value", f"pair {pair}: baseline {base:g}, candidate {cand:g}")
                continue
            said = firsts.get(pair)
            fresh.append(Pair(pass_no, pair, base, cand, came[pair] if said is None else said, said is None))
        values = tuple((p.baseline, p.candidate) for p in sorted(fresh, key=lambda p: p.pair))
        earlier = self._replayed(values)
        if earlier is not None:
            report.trouble("replay", f"pass {pass_no} = pass {earlier}, {len(values)} pairs")
            fresh = []
        report.counted, report.fresh, report.higher_is_better = len(fresh), fresh, direction
        if asked is not None and fresh and len(fresh) != asked:
            report.notes_after.append(f"asked for {asked} pair{'s' * (asked != 1)}, {len(fresh)} came back complete")
        if commit:
            self.higher_is_better, self.unit = direction, unit
            self.dropped += mine - 2 * len(fresh)
            if fresh:
                self._passes.append((pass_no, values))
            self.pairs.extend(fresh)
            if fresh:
                self.looks.append(len(self.pairs))
            self.reports.append(report)
        return report

    def _replayed(self, values: tuple[tuple[float, float], ...]) -> Any:
        """The earlier pass these values repeat (one a prefix of the other), or None. Values that do not vary
        inside the pass are too coarse to tell a replay from a bench that rounds: never a replay."""
        if len(values) < MIN_REPLAY or len(set(values)) < 2:
            return None
        for pass_no, before in self._passes:
            k = min(len(before), len(values))
            if k >= MIN_REPLAY and before[:k] == values[:k]:
                return pass_no
        return None

    def ratios(self, extra: Iterable[Pair] = (), higher_is_better: bool | None = None) -> list[float]:
        """Per-pair ratios, oriented so that > 1 means the candidate is better (by `higher_is_better` while the
        book has no direction yet: a preview of the first pass)."""
        known = self.higher_is_better if self.higher_is_better is not None else higher_is_better
        higher = known is not False
        return [p.candidate / p.baseline if higher else p.baseline / p.candidate for p in [*self.pairs, *extra]]

    def nothing_counted(self, report: PassReport) -> str:
        """Why a pass gave no pair, naming the metric the rule wants and what the command reported."""
        seen = report.reported
        mine = seen.get(self.metric, {})
        if not seen:
            what = "no samples at all"
        else:
            what = "; ".join(f"{metric} ({', '.join(f'{arm} {n}' for arm, n in arms.items())})"
                             for metric, arms in seen.items())
        if not mine:
            return (f"pass {report.pass_no} gave no pair of {self.metric}, the rule's metric; "
                    f"the command reported {what}")
        detail = "; ".join(w.partition(": ")[2] for w in report.notes()[:2]) or "no pair had both arms"
        return f"pass {report.pass_no} gave no new pair of {self.metric}: {detail}"


def book(samples: Iterable[Mapping[str, Any]], metric: str, budget_asked: Mapping[Any, int] | None = None) -> PairBook:
    """A PairBook of stored samples, passes in the order they first appear (their `run` tag)."""
    passes: dict[Any, list[Mapping[str, Any]]] = {}
    for s in samples:
        if isinstance(s, Mapping):
            passes.setdefault(s.get("run"), []).append(s)
    result = PairBook(metric)
    for pass_no, items in passes.items():
        result.add_pass(pass_no, items, (budget_asked or {}).get(pass_no))
    return result


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
