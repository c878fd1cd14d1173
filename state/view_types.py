"""What status says, as types: the levers as status, the console and the snapshot show them (`LeverStatus`), and
the whole status (`Status`), built once by ReadViews (state/views.py) and read by attribute wherever they go.

Each Struct's fields are in the order `optseq status --json` prints its keys, and `msgspec.to_builtins` of it is
that JSON's object, nulls included: a field that status leaves out in some cases (a lever's `criteria` without
criteria, `hours_saved` before the calculus ran, the conflicts and the sync of a store that has none) is UNSET
there, never null. What a reader passes on whole without reading its fields (a decision record, a screen's
summary, the testbed, the facts) stays the dict it is.
"""
from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from optseq.state.record_types import Decision, as_


class _View(msgspec.Struct, frozen=True, kw_only=True):
    """A part of status: built from the machine's models, never decoded, so nothing here is checked twice."""


class BranchStatus(_View, frozen=True, kw_only=True):
    """A branch lever's code as it stands (state/branch_views.py): `state` is `unmerged` (adopted, its commit not
    in the baseline yet), `landed`, or None (not adopted)."""
    ref: str
    baseline_ref: str
    commit: str | None
    state: str | None
    since: str | None
    text: str | None


class WatchStatus(_View, frozen=True, kw_only=True):
    """The newest watch of an adopted lever (lifecycle/watched.py): its verdict and figures."""
    run: int | None
    verdict: str | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    commit: str | None
    at: str | None


class Unavailable(_View, frozen=True, kw_only=True):
    """Why a lever cannot run on this device, and the run that found it."""
    reason: str | None
    run: int | None


class RunBrief(_View, frozen=True, kw_only=True):
    """A lever's latest run as status shows it: how it ended, its figures (the per-pair lists left out), its noise."""
    id: int | None
    status: str | None
    verdict: str | None
    started: str | None
    ended: str | None
    detail: str | None
    stats: dict[str, Any] | None
    noise: str | None


class Interaction(_View, frozen=True, kw_only=True):
    """A significant interaction a screen found with another lever, its sentence said in English (`text`)."""
    with_: str = msgspec.field(name="with")
    effect: dict[str, Any]
    run: int | None
    significant: bool
    off: float
    on: float
    said: dict[str, Any]
    text: str


class ScreenFact(_View, frozen=True, kw_only=True):
    """What the latest screens measured of a lever (lifecycle/screened.py lever_facts), said in English beside."""
    run: int | None
    main: dict[str, Any] | None
    call: dict[str, Any] | None
    interactions: list[Interaction]
    main_said: dict[str, Any] | None
    main_text: str | None


class CandidateStatus(_View, frozen=True, kw_only=True):
    """One candidate of a criteria lever: its status, each criterion's result, and what each recorded one rests
    on."""
    status: str
    results: dict[str, str]
    evidence: dict[str, str]


class LeverStatus(_View, frozen=True, kw_only=True, dict=True):
    """One lever as status gives it: the table's row, the detail's text, the snapshot's state. (`dict`: room for
    `standing`, decoded at its first read and kept; no field of the JSON.)"""
    id: str
    title: str
    kind: str
    state: str
    outcome: str | None
    stale: bool
    stale_reason: str | None
    why_blocked: list[str]
    plan_doc: str | None
    code: str
    requires: str | None
    decision: dict[str, Any] | None
    """The standing decision record as stored (its keys open-ended), without the store's doc_id."""
    warnings: list[str]
    branch: BranchStatus | None
    watch: WatchStatus | None
    eroded: str | None
    unavailable: Unavailable | None
    remeasured: str | None
    last_run: RunBrief | None
    last_failure: str | None
    screen: ScreenFact | None
    testbed: str | None
    elsewhere: str | None
    testbeds_shown: bool
    testbed_note: str | None
    note: str = ""
    criteria: dict[str, CandidateStatus] | UnsetType = UNSET
    """A criteria lever's candidates; UNSET (left out) for a lever without criteria."""
    hours_saved: float | None | UnsetType = UNSET
    """Expected hours saved in the plan's order; UNSET (left out) where status was asked without the calculus."""

    @property
    def has_hours(self) -> bool:
        """Whether the calculus ran for this status (its figure may still be None: no volume declared)."""
        return not isinstance(self.hours_saved, UnsetType)

    @property
    def saved(self) -> float | None:
        """`hours_saved`, None where it is unknown or was not worked out."""
        return None if isinstance(self.hours_saved, UnsetType) else self.hours_saved

    @property
    def candidates(self) -> dict[str, CandidateStatus]:
        """The criteria lever's candidates; empty for any other lever."""
        return {} if isinstance(self.criteria, UnsetType) else self.criteria

    def with_warnings(self, more: list[str]) -> LeverStatus:
        """This lever with `more` warnings after its own (a conflict the console found beside it)."""
        return msgspec.structs.replace(self, warnings=[*self.warnings, *more])

    @functools.cached_property
    def standing(self) -> Decision | None:
        """The standing decision as its readers read it (record_types.Decision), decoded once; None without one.
        `decision` stays the record as stored, which `--json` prints whole."""
        return None if self.decision is None else as_(Decision, self.decision)

    @property
    def decision_runs(self) -> list[int]:
        """The runs the standing decision rests on; empty without one."""
        standing = self.standing
        return list(standing.runs or []) if standing else []


class MarkedDecision(Decision, frozen=True):
    """A decision as the console's detail lists it (ReadViews.lever_history): the record as its readers read it,
    with what state/supersession.py found superseded it (`superseded_by`, its text; None while it stands)."""
    superseded: bool = False
    superseded_by: str | None = None


class DecisionPoint(_View, frozen=True, kw_only=True):
    """A decision point of the plan, and when it fired (None: not yet)."""
    id: str
    lever: str
    on: str
    text: str
    reopens: list[str]
    fired: str | None


class Claim(_View, frozen=True, kw_only=True):
    """Where the screens' data contradicts the plan's edges between two screened levers, said in English."""
    levers: list[str]
    run: int | None
    said: dict[str, Any]
    text: str


class Status(_View, frozen=True, kw_only=True):
    """`optseq status`: the plan's levers, what is next, what waits on the user, and the facts."""
    plan: str
    as_of: str
    store: str
    readonly: bool
    next: str | None
    todo: list[str]
    levers: list[LeverStatus]
    facts: dict[str, Any]
    infra: dict[str, Any]
    decision_points: list[DecisionPoint]
    warnings: list[str]
    testbed: dict[str, Any]
    """This process' testbed ({id, name, parts} or {error}), the plan's deciding one and those seen: passed whole."""
    screen: dict[str, Any] | None
    """The newest screen as lifecycle/screened.py summary says it: passed whole to its lines."""
    screen_claims: list[Claim]
    conflicts: list[dict[str, Any]] | UnsetType = UNSET
    """Decisions two writers made concurrently (optseq sync): left out where there are none."""
    sync: dict[str, Any] | UnsetType = UNSET
    """What the last sync brought: left out before any."""

    @property
    def found_conflicts(self) -> list[dict[str, Any]]:
        """The conflicts this status carries; empty where it has none."""
        return [] if isinstance(self.conflicts, UnsetType) else self.conflicts

    def with_sync(self, conflicts: list[dict[str, Any]] | None, sync: dict[str, Any] | None) -> Status:
        """This status with the store's conflicts and its last sync, each where there is one."""
        return msgspec.structs.replace(self, conflicts=conflicts or UNSET, sync=sync or UNSET)

    def with_levers(self, levers: list[LeverStatus]) -> Status:
        return msgspec.structs.replace(self, levers=levers)


def as_json(value: msgspec.Struct) -> Any:
    """A view as the JSON object `--json` prints: its fields in order, nulls kept, UNSET ones left out."""
    return msgspec.to_builtins(value, enc_hook=_plain)


def _plain(value: object) -> object:
    """A str the plan holds in several languages (plan/prose.py Prose, a str subclass) as the str it reads as, which
    is what json.dumps wrote of it."""
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"status holds a {type(value).__name__}, which JSON has no form of")
