"""Records as types: what the store gives out, decoded once into frozen msgspec Structs that readers take fields of
by name, instead of dicts that each reader probes with `.get` and `isinstance`.

shapes.py says what a stored record may be (and the store refuses what is not, as it reads); this says what a reader
reads of one that passed. So the types here are the readers' view of a record, not its schema:

- a field absent from a record and a field stored as null read the same, None (as every `.get` read them), so a
  record written by an older optseq, which lacks a field added since, reads as it did;
- keys a reader does not name are not kept on the Struct: the stored record keeps them, and whoever passes a record
  on whole (a sync's merge, the export's rows, a run index's kept copy) takes the store's dict, not this;
- a field whose older records hold another shape (a run's `summary` once a string) keeps the union the schema
  allows, and `part` reads the object in it or nothing;
- the words a reader switches on are the enums of state/kinds.py (a StrEnum member equals its string, so a
  stored string and a member compare equal both ways).

Decoding is one msgspec `convert` per record, compiled code that does not walk the record in Python.
"""

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from optseq.state.kinds import RunStatus


class _Typed(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A stored record as its readers read it: what the store adds (its id, its place in the history, its time)."""
    id: int | None = None
    seq: int | None = None
    at: str | None = None


class Run(_Typed, frozen=True):
    """A run record (`runs`): a lever's run, a watch (`watch`), a compare (`kind` compare), a screen (`kind`
    screen) or a screen's confirmation (`kind` confirm)."""
    lever: str | None = None
    kind: str | None = None
    status: RunStatus | None = None
    verdict: str | None | UnsetType = UNSET  # absent (not null) in a run written before runs carried it: its
    # summary says it (lifecycle/moves.py)
    detail: str | None = None
    reason: str | None = None
    started: str | None = None
    ended: str | None = None
    elapsed_s: float | None = None
    passes: int | None = None
    n_samples: int | None = None
    summary: "Summary | str | None" = None  # a string in runs of an old release: summary_of reads it as empty
    infra: dict[str, Any] | None = None
    fingerprint: dict[str, Any] | None = None
    testbed: dict[str, Any] | None = None
    screen: dict[str, Any] | None = None
    watch: bool | None = None  # a watch of a standing adopt (runs/run_record.py)
    origin: dict[str, Any] | None = None
    leftovers: list[Any] | None = None
    runner: str | None = "local"  # absent in a run from before runners: it ran here
    pid: int | None = None
    ray_address: str | None = None  # the cluster a run's job went to (runs/run_pass.py): where a left job is stopped
    arms: dict[str, Any] | None = None  # a command-pair lever's two commands, as the run launched them
    compare: dict[str, Any] | None = None  # a compare's refs, commits and tolerance (kind compare)
    code: dict[str, Any] | None = None  # a branch lever's two commits, as its run's start resolved them
    log_tail: list[Any] | None = None  # a failed run's last lines of output
    notes: list[Any] | None = None  # what the run's end adds to say (leftovers stopped)

    @property
    def figures(self) -> "Summary":
        """The run's summary, empty where it stored none or an older release's string."""
        return self.summary if isinstance(self.summary, Summary) else NO_SUMMARY

    @property
    def stats(self) -> "Stats":
        """The paired statistics the run stored, empty for a failed run, an experiment or a decision lever."""
        return self.figures.stats or NO_STATS


class Decision(_Typed, frozen=True):
    """A decision (`decisions`): a lever's outcome, by hand, by the rule (`auto`) or from the plan (`source`)."""
    lever: str = ""
    outcome: str = ""
    auto: bool | None = None
    rule: str | None = None
    why: str | None = None
    runs: list[int] | None = None
    stats: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    supersedes: int | None = None
    source: str | None = None
    yields: int | None = None  # the decision it yields to, made unseen by its writer (sync/conflicts.py)
    why_said: dict[str, Any] | None = None  # `why` as its rule said it, for the export's language
    origin: dict[str, Any] | None = None  # the writer of a decision merged by optseq sync (the export names it)


class Criterion(_Typed, frozen=True):
    """A criterion's result (`criteria`): one candidate of a lever, one criterion, pass or fail."""
    lever: str = ""
    candidate: str = ""
    criterion: str = ""
    outcome: Literal["pass", "fail"] = "fail"
    evidence: str | None = ""  # absent reads as "" (the results a snapshot keeps), null as None


class Fact(_Typed, frozen=True):
    """A fact (`facts`): a named truth the plan's gates read."""
    name: str = ""
    value: bool = False


class Event(_Typed, frozen=True):
    """An event (`events`): a plan written, a decision point fired, a lever gone stale, a branch landed or not."""
    type: str = ""
    lever: str | None = None
    point: str | None = None
    path: str | None = None
    reason: str | None = None
    said: dict[str, Any] | None = None
    commit: str | None = None
    since: str | None = None
    base: str | None = None
    run: int | None = None
    decision: int | None = None
    derived: bool | None = None


Typed = Run | Decision | Criterion | Fact | Event
TYPES: dict[str, type[Typed]] = {"runs": Run, "decisions": Decision, "criteria": Criterion, "facts": Fact,
                                 "events": Event}
"""Each history table's record type."""

T = TypeVar("T", Run, Decision, Criterion, Fact, Event)


def decode(table: str, record: Mapping[str, Any]) -> Typed:
    """A stored record of a history table as its type. A record the store checked always decodes; one that does not
    (built by hand, never stored) is a msgspec.ValidationError naming its field."""
    return msgspec.convert(record, TYPES[table])


def as_(kind: type[T], record: Mapping[str, Any] | Typed) -> T:
    """`record` as a `kind`: itself where a reader decoded it already, else the store's dict decoded (a caller
    that has not moved to types)."""
    return record if isinstance(record, kind) else msgspec.convert(record, kind)


def part(value: object, key: str) -> dict[str, Any]:
    """`value[key]` where `value` is an object and that is one too, else empty: the part of a record an older
    release wrote in another shape, or not at all, reads as none."""
    if isinstance(value, msgspec.Struct):  # a typed part (a run's Summary) where a caller still reads dicts: its
        value = msgspec.to_builtins(value)  # fields as stored, not none (a run's watch figures were lost that way)
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


# ---- a run's summary: what its end stored of its statistics and the rule's verdict (state/runs/run_record.py,
# compare_run.py, screen_finish.py); shapes.Summary and shapes.Stats check each field typed here

class Stats(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A paired A/B run's statistics (state/runs/stats.py PairedStats.to_dict), or a decision's copy of them."""
    metric: str | None = None
    n: int | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    higher_is_better: bool | None = None
    unit: str | None = None
    launches: int | None = None
    replicate: str | None = None  # "launch" where each launch is one unit of the test, else pairs
    noise: str | None = None  # the busy-machine or noisy-baseline line its end wrote
    bench_size: str | None = None  # the reference workload's size ("ci"): its figures are not the plan's
    order: str | None = None  # where the pairs' order came from the samples, the line that says so
    stalls: str | None = None  # on an adopt, what its candidate calls could have seen of a stall
    baseline: dict[str, Any] | None = None  # each arm's median and quartiles (stats.py ArmFigures), read whole
    candidate: dict[str, Any] | None = None


class RuleVerdict(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """The decision rule's verdict as a run's summary keeps it (state/runs/decide_rule.py Verdict.to_dict)."""
    outcome: str | None = None
    reason: str | None = None
    said: dict[str, Any] | None = None


class Summary(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """What a run's end stored of its figures: an A/B run's stats and verdict, an experiment's chosen config, or
    the error that left it unjudged."""
    stats: Stats | None = None
    verdict: RuleVerdict | str | None = None  # a string in no release's runs that the schema still lets through
    chosen: str | None | UnsetType = UNSET  # a best-of run's, null where it chose none; absent in other runs
    reason: str | None = None  # a best-of run's reason for its choice
    error: str | None = None
    noise: str | None = None  # an experiment's noise line (an A/B run's is its stats')
    bench_size: str | None = None
    best_of: dict[str, Any] | None = None
    arms: dict[str, Any] | None = None  # an experiment's per-config figures (stats.py ArmsTable.to_dict)

    @property
    def rule_verdict(self) -> RuleVerdict:
        """The verdict as an object: one that is none (an odd string, or absent) reads as empty."""
        return self.verdict if isinstance(self.verdict, RuleVerdict) else NO_VERDICT


NO_VERDICT = RuleVerdict()
NO_STATS = Stats()
NO_SUMMARY = Summary()


def figures_of(summary: Mapping[str, Any] | None) -> Summary:
    """A summary a run's end made (and stored, checked by shapes.Summary) as a Summary, empty for none."""
    return msgspec.convert(summary, Summary) if summary else NO_SUMMARY


def stats_from(stats: Mapping[str, Any] | None) -> Stats:
    """A record's statistics the store checked (a decision's `stats`, shapes.Stats) as a Stats, empty for none."""
    return msgspec.convert(stats, Stats) if stats else NO_STATS


__all__ = ["UNSET", "Run", "Decision", "Criterion", "Fact", "Event", "Typed", "TYPES", "decode", "as_", "part",
           "Stats", "RuleVerdict", "Summary", "figures_of", "stats_from", "NO_STATS", "NO_SUMMARY", "NO_VERDICT"]
