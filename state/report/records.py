"""The records the export reads (the views' `export_records`), decoded once as the doc starts: decisions, events,
criteria and facts as their record types, the sync's conflicts and the digest's counts as small Structs. The runs
are the run index's kept copies (lifecycle/run_index.py KeptRun), typed as it kept them and passed through.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.record_types import Criterion, Decision, Event, Fact


class Hidden(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Older decisions of a lever the store's digest left out: only their count is exported."""
    lever: str | None = None
    count: int = 0


class Side(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """One writer's decision of a conflict."""
    outcome: str | None = None
    writer: str | None = None
    why: str | None = None


class Conflict(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """Two writers' decisions of a lever, neither seen by the other (sync/conflicts.py): the one the lever holds,
    and the other."""
    lever: str = ""
    holds: Side = Side()
    other: Side = Side()


class Records(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """What the export reads of the store, each table's records oldest first."""
    runs: list[KeptRun] = []
    decisions: list[Decision] = []
    events: list[Event] = []
    criteria: list[Criterion] = []
    facts: list[Fact] = []
    decisions_hidden: list[Hidden] = []
    conflicts: list[Conflict] = []

    def dated(self) -> list[Decision | Event | Criterion | Fact]:
        """The history's records that carry a time (the runs' are read apart)."""
        return [r for recs in (self.decisions, self.events, self.criteria, self.facts) for r in recs if r.at]


def decoded(records: Mapping[str, Sequence[object]] | None) -> Records:
    """The views' records as types, in one msgspec call: the store checked each record's shape as it read it. The
    runs, typed already, are passed through (a convert would build a type of every run field for nothing)."""
    records = records or {}
    found = msgspec.convert({k: v for k, v in records.items() if k != "runs"}, Records)
    runs = records.get("runs")
    return msgspec.structs.replace(found, runs=list(runs)) if runs else found


__all__ = ["Records", "Hidden", "Conflict", "Side", "decoded"]
