"""Pair accounting: which samples of a lever's passes make counted A/B pairs, and what the command got wrong.

optseq asks each pass for a number of pairs and checks what came back before any statistics: a
second sample for one arm and pair index, a metric whose direction flips, a non-positive value, or
a pass that replays the numbers of an earlier one is reported in one line and never counted twice.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

BASELINE, CANDIDATE = "baseline", "candidate"


@dataclass(frozen=True)
class Pair:
    run: Any
    """The pass it came from (the `run` tag of its samples)."""
    pair: int
    baseline: float
    candidate: float


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
TROUBLES = {
    "malformed": "{n} malformed sample{s}",
    "direction": "{n} sample{s} with the other higher_is_better",
    "duplicate": "{n} repeated pair {ind}",
    "half": "{n} pair{s} with one arm only",
    "value": "{n} pair{s} with a value that is not positive and finite",
    "replay": "{n} pair{s} repeating earlier numbers exactly, a replay (does the command vary its seed and honour "
              "OPTSEQ_REPEATS?)",
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
        self._seen: dict[tuple[float, float], tuple[Any, int]] = {}

    def add_pass(self, pass_no: Any, samples: Iterable[Mapping[str, Any]], asked: int | None = None,
                 commit: bool = True) -> PassReport:
        """Count one pass's samples; with commit=False only report (a live preview of a pass under way)."""
        report = PassReport(pass_no, asked)
        halves: dict[int, dict[str, float]] = {}
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
            slot[arm] = float(value)
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
            earlier = self._seen.get((base, cand))
            if earlier is not None:
                report.trouble("replay", f"pair {pair} = pass {earlier[0]} pair {earlier[1]}")
                continue
            fresh.append(Pair(pass_no, pair, base, cand))
        report.counted, report.fresh = len(fresh), fresh
        if asked is not None and fresh and len(fresh) != asked:
            report.notes_after.append(f"asked for {asked} pair{'s' * (asked != 1)}, {len(fresh)} came back complete")
        if commit:
            self.higher_is_better, self.unit = direction, unit
            self.dropped += mine - 2 * len(fresh)
            for p in fresh:
                self._seen.setdefault((p.baseline, p.candidate), (pass_no, p.pair))
            self.pairs.extend(fresh)
            if fresh:
                self.looks.append(len(self.pairs))
            self.reports.append(report)
        return report

    def ratios(self, extra: Iterable[Pair] = ()) -> list[float]:
        """Per-pair ratios, oriented so that > 1 means the candidate is better."""
        higher = self.higher_is_better is not False
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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
