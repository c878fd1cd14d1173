"""A lever's change points in terms of its runs: which run the ratio moved at, from what to what, and the commits,
device and stack on each side, for `optseq runs LEVER`, the console's history plot and the export.

A hint of where to look, never a decision: the decision is still each run's paired test.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple, Sequence

from optseq.state.lifecycle.history_points import finite, measured_at, run_stats
from optseq.state.runs import change_points
from optseq.state.text import ratio_text
from optseq.state.plan.testbed import UNKNOWN, name_of

MIN_RUNS = 3
"""A lever's history is looked at from this many runs with an estimate; change_points.MIN_SIZE runs must lie
on each side of a change, so a change shows from four."""
CHUNK = 64
"""Runs a spilled Kept holds in memory (28 bytes each) before it writes them to its file."""
COLUMNS = ("ids", "logs", "ses", "sides")
"""Kept.column's k: 0 the run ids, 1 the log ratios, 2 the interval_se, 3 the Side indexes."""


@dataclass(frozen=True)
class Change:
    """A change point between two runs of one lever."""

    run: int
    """The first run at the new level."""
    previous: int
    """The last run at the old level."""
    before: float
    after: float
    old: dict = field(default_factory=dict)
    new: dict = field(default_factory=dict)
    """measured_at of the runs either side: {commit, device, base, dirty}, what each knows."""
    stacks: tuple[str, str] = ("", "")
    """The stack either side as `optseq status` names it (adopted levers, model), where the two differ."""
    root: str | None = None
    """The repository the runs measured (their fingerprint's), where git can count the commits between."""

    def commits(self) -> tuple[str, str] | None:
        """The short commits either side, when both runs recorded one."""
        old, new = self.old.get("commit"), self.new.get("commit")
        return (str(old)[:7], str(new)[:7]) if old and new else None


def series(runs) -> list[dict]:
    """A lever's runs with a positive finite estimate, oldest first: what its change points are found in."""
    out = []
    for run in sorted(runs, key=lambda r: r.get("id") or 0):
        estimate = finite(run_stats(run).get("estimate"))
        if estimate is not None and estimate > 0 and run.get("id") is not None:
            out.append(run)
    return out


def changes(runs) -> list[Change]:
    """The change points of these runs of one lever (all its runs, or the newest the machine keeps), oldest
    first; [] below MIN_RUNS runs with an estimate, and without importing the detector's libraries. Each testbed's
    runs are a series of their own (two machines' levels are no change); a run recorded before runs carried their
    testbed belongs to each."""
    kept = Kept()
    for run in runs:
        kept.add(run)
    return kept.changes()


class Side(NamedTuple):
    """What a change says of the runs either side beyond their numbers; most runs share one (a commit, a device,
    a stack), so each distinct one is kept once."""

    on: dict
    """measured_at(run)."""
    stack: str
    testbed: str
    root: str | None


class Kept:
    """One lever's runs as its change points need them, compactly, for a history streamed record by record
    (`optseq runs --json` over 100,000 runs): the ids, log ratios and interval_se in arrays, each run's Side an
    index into the distinct ones, about 28 bytes a run where a dict of each run's fields took about 2 KB; with a
    `spill` file, every CHUNK runs go to it and a few KiB stay in memory however long the history, the search
    reading back the two columns it needs. `changes` (the runs as dicts: `runs LEVER`, the plot, the export) goes
    through it too, so both find the same points."""

    __slots__ = ("ids", "logs", "ses", "sides", "testbeds", "_distinct", "_index", "_spill", "_chunks", "_last",
                 "_ordered")

    def __init__(self, spill: BinaryIO | None = None) -> None:
        self.ids, self.logs, self.ses, self.sides = array("q"), array("d"), array("d"), array("I")
        """The runs not spilled (all of them without a file); COLUMNS' order. An ses without an interval is NaN."""
        self.testbeds: set[str] = set()
        """Every run's testbed, an estimate or not: changes() splits the series by the names it sees."""
        self._distinct: list[Side] = []
        self._index: dict[object, int] = {}
        self._spill = spill
        self._chunks: list[int] = []
        """Where each spilled chunk of CHUNK runs starts in the file: its columns one after the other."""
        self._last: int | None = None
        self._ordered = True
        """No run was added after one with a greater id (as the store streams them): no column read to sort."""

    def add(self, run: dict) -> None:
        """One run of the lever, in the order the store gives them."""
        testbed = name_of(run)
        self.testbeds.add(testbed)
        stats = run_stats(run)
        estimate, key = finite(stats.get("estimate")), run.get("id")
        if estimate is None or estimate <= 0 or not isinstance(key, int) or isinstance(key, bool):
            return
        if self._last is not None and key < self._last:
            self._ordered = False
        self._last = key
        self.ids.append(key)
        self.logs.append(math.log(estimate))
        low, high = (finite(stats.get(name)) for name in ("ci_low", "ci_high"))
        self.ses.append(change_points.interval_se(low, high))
        self.sides.append(self._side(Side(measured_at(run), _stack(run.get("infra")), testbed, _root(run))))
        if self._spill is not None and len(self.ids) == CHUNK:
            self._chunks.append(self._spill.seek(0, 2))
            for column in self._columns():
                column.tofile(self._spill)
                del column[:]

    def _side(self, side: Side) -> int:
        try:  # its keys in order: a change's `old` and `new` are written as the run's were
            key: object = (tuple(side.on.items()), *side[1:])
            index = self._index.get(key)
        except TypeError:  # a value no hash takes (a store edited by hand): its text tells it apart
            key = (repr(side.on), *side[1:])
            index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self._distinct)
            self._distinct.append(side)
        return index

    def _columns(self) -> tuple[array, ...]:
        return self.ids, self.logs, self.ses, self.sides

    def __len__(self) -> int:
        return CHUNK * len(self._chunks) + len(self.ids)

    def column(self, k: int) -> array:
        """Column k of every run added (COLUMNS), a new array: the spilled chunks read back, then the rest."""
        held = self._columns()[k]
        out = array(held.typecode)
        if self._spill is not None:
            skip = sum(c.itemsize for c in self._columns()[:k]) * CHUNK
            for at in self._chunks:
                self._spill.seek(at + skip)
                out.fromfile(self._spill, CHUNK)
        out.extend(held)
        return out

    def at(self, k: int, i: int) -> int:
        """Column k's value of run i (an id or a side), read alone where it was spilled."""
        columns, spilled = self._columns(), CHUNK * len(self._chunks)
        if i >= spilled or self._spill is None:
            return int(columns[k][i - spilled])
        chunk, j = divmod(i, CHUNK)
        before = sum(c.itemsize for c in columns[:k]) * CHUNK  # the chunk's columns before this one
        self._spill.seek(self._chunks[chunk] + before + columns[k].itemsize * j)
        one = array(columns[k].typecode)
        one.fromfile(self._spill, 1)
        return int(one[0])

    def changes(self) -> list[Change]:
        """The change points of the runs added, as changes() says."""
        order: Sequence[int] = range(len(self))
        if not self._ordered:  # stable: runs of one id keep the order they came in
            order = sorted(order, key=self.column(0).__getitem__)
        named = sorted(self.testbeds - {UNKNOWN})
        if len(named) <= 1:
            return self._found(order)
        sides = self.column(3)
        found = {(c.previous, c.run): c for name in named for c in self._found(
            [i for i in order if self._distinct[sides[i]].testbed in (name, UNKNOWN)])}
        return sorted(found.values(), key=lambda c: c.run)

    def _found(self, points: Sequence[int]) -> list[Change]:
        if len(points) < MIN_RUNS:
            return []
        every = points == range(len(self))

        def taken(k: int) -> array:  # a NaN ses is no interval to the detector, as None is
            values = self.column(k)
            return values if every else array("d", (values[i] for i in points))

        out = []
        for shift in change_points.find_logs(taken(1), taken(2)):
            previous, first = points[shift.at - 1], points[shift.at]
            old, new = self._distinct[self.at(3, previous)], self._distinct[self.at(3, first)]
            out.append(Change(self.at(0, first), self.at(0, previous), shift.before, shift.after, dict(old.on),
                              dict(new.on), (old.stack, new.stack), new.root or old.root))
        return out


def change_text(change: Change, count: int | None = None, brief: bool = False) -> str:
    """`change at run 15: 1.29× → 1.05×, between commits 9a8b7c0..d4e5f61, 4 commits: git log 9a8b7c0..d4e5f61`,
    with the device and the stack where they changed too; `count` is the commits between, where git told.
    `brief`: `commits 9a8b7c0..d4e5f61` and no command, for a line under a plot."""
    text = f"change at run {change.run}: {ratio_text(change.before)}× → {ratio_text(change.after)}×"
    commits = change.commits()
    if commits is None:
        text += ", no commit recorded"
    elif commits[0] == commits[1]:
        text += f", at commit {commits[0]} on both sides"
    elif brief:
        text += f", commits {commits[0]}..{commits[1]}"
    else:
        span = f"{commits[0]}..{commits[1]}"
        counted = f"{count} commit{'' if count == 1 else 's'}: " if count is not None else ""
        text += f", between commits {span}, {counted}git log {span}"
    return text + "".join(f"; {part}" for part in also(change))


def also(change: Change) -> list[str]:
    """What else differs across the change: the baseline's commit (a branch lever), uncommitted changes, the
    device, the stack."""
    old, new = change.old, change.new
    parts = []
    if old.get("base") and new.get("base") and old["base"] != new["base"]:
        parts.append(f"baseline {str(old['base'])[:7]}..{str(new['base'])[:7]}")
    dirty = [str(r) for r, on in ((change.previous, old), (change.run, new)) if on.get("dirty")]
    if dirty:
        parts.append(f"uncommitted changes in run {' and '.join(dirty)}")
    if old.get("device") and new.get("device") and old["device"] != new["device"]:
        parts.append(f"device {old['device']} → {new['device']}")
    if change.stacks[0] != change.stacks[1]:
        parts.append(f"stack {change.stacks[0] or 'none'} → {change.stacks[1] or 'none'}")
    return parts


def count_commits(change: Change) -> int | None:
    """Commits in the new run's commit that the old run's lacks, from git in the runs' repository; None where
    it cannot say (no repository recorded, a commit rebased away, no git)."""
    commits = change.commits()
    if change.root is None or commits is None or change.old["commit"] == change.new["commit"]:
        return None
    from optseq.state.code import git

    return git.count(change.root, change.old["commit"], change.new["commit"])


def _stack(infra) -> str:
    """`amp+compile, model h64x2`: the adopted levers and the model a run's arms both carried."""
    if not isinstance(infra, dict):
        return ""
    adopted = "+".join(str(a) for a in infra.get("adopted") or ())
    model = (infra.get("model") or {}).get("name") if isinstance(infra.get("model"), dict) else None
    return ", ".join(p for p in (adopted, f"model {model}" if model else "") if p)


def _root(run: dict) -> str | None:
    fingerprint = found if isinstance(found := run.get("fingerprint"), dict) else {}
    repo, code = fingerprint.get("repo"), fingerprint.get("code")
    root = (repo or {}).get("root") if isinstance(repo, dict) else (code or {}).get("repo") \
        if isinstance(code, dict) else None
    return str(root) if root else None
