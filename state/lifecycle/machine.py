"""The lever lifecycle on `transitions`, built from the plan; records are replayed onto it in order.

Everything here is a function of the records in `seq` order, so a fresh replay reaches the same states:
a reversed gate closes and reopens branches, a lever that leaves the stack (closed branch, inconclusive
re-measure, a new outcome) makes what was measured with it stale, and an `unavailable` run is remembered
until the device changes. What those moves derive (stale, superseded) is handed back for the store's history.

PlanMachine is made of parts, each given what it works on: the Board (the data), Standing (reading it: states,
gates, the stack, what is next, whether an action is allowed), Staleness (marking what was measured on a moved
stack), Watched (a watch's verdict on an adopted gain) and RecordMoves (a record's move). Its methods are the
parts' for the callers that know it by this one name.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from optseq.state.plan import gates
from optseq.state.plan.model import Candidate, Plan
from optseq.state.lifecycle.board import Board, Effects
from optseq.state.lifecycle.fields import Derived, Record, Said
from optseq.state.lifecycle.moves import RecordMoves
from optseq.state.lifecycle.run_index import RunIndex
from optseq.state.lifecycle.staleness import Staleness
from optseq.state.lifecycle.standing import Standing
from optseq.state.lifecycle.states import LeverModel
from optseq.state.lifecycle.watched import Watched
from optseq.state.record_types import Typed


class PlanMachine:
    """Every lever's state machine plus the facts, driven by plan priors and stored records."""

    def __init__(self, plan: Plan, settle: bool = True):
        """`settle`: decide the plan's priors and move every lever across its gates; a snapshot about to set
        every lever's state and fields (snapshot.load) skips it, so that reading one moves no machine."""
        self.board = Board.of(plan)
        effects = Effects()
        self.standing = Standing(self.board)
        self.staleness = Staleness(self.board, self.standing, effects)
        self.watches = Watched(self.board, self.staleness)
        self.moves = RecordMoves(self.board, self.standing, self.staleness, self.watches, effects)
        if not settle:
            return
        for lever in plan.levers:
            if lever.prior:
                self.moves.decide(lever.id, lever.prior.outcome, seq=0,
                                  record={"source": "plan", "auto": False, "why": lever.prior.note})
        self.moves.refresh()

    # -- the board, as callers name it ---------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self.board.plan

    @property
    def models(self) -> dict[str, LeverModel]:
        return self.board.models

    @property
    def facts(self) -> dict[str, bool]:
        return self.board.facts

    @property
    def definitions(self) -> dict[str, dict[str, str]]:
        return self.board.definitions

    @property
    def runs(self) -> RunIndex:
        return self.board.runs

    @runs.setter
    def runs(self, runs: RunIndex) -> None:
        self.board.runs = runs

    @property
    def fired(self) -> dict[str, str | None]:
        return self.board.fired

    @fired.setter
    def fired(self, fired: dict[str, str | None]) -> None:
        self.board.fired = fired

    @property
    def last_device(self) -> str | None:
        return self.board.last_device

    @last_device.setter
    def last_device(self, device: str | None) -> None:
        self.board.last_device = device

    @property
    def cannot_run(self) -> Callable[[str], str | None] | None:
        return self.board.cannot_run

    @cannot_run.setter
    def cannot_run(self, why: Callable[[str], str | None] | None) -> None:
        self.board.cannot_run = why

    # -- reading (Standing) --------------------------------------------------------------------------------------
    def state(self, lever_id: str) -> str:
        return self.standing.state(lever_id)

    def context(self) -> gates.Context:
        return self.standing.context()

    def branch_code(self, lever_id: str) -> dict[str, Any] | None:
        return self.standing.branch_code(lever_id)

    def unmerged(self, lever_id: str) -> dict[str, Any] | None:
        return self.standing.unmerged(lever_id)

    def pending(self, lever_id: str) -> str | None:
        return self.standing.pending(lever_id)

    def in_stack(self, lever_id: str) -> bool:
        return self.standing.in_stack(lever_id)

    def why_blocked(self, lever_id: str) -> list[str]:
        return self.standing.why_blocked(lever_id)

    def candidate_status(self, lever_id: str, candidate: Candidate) -> str:
        return self.standing.candidate_status(lever_id, candidate)

    def criteria_verdict(self, lever_id: str) -> str | None:
        return self.standing.criteria_verdict(lever_id)

    def ready_in_order(self) -> list[str]:
        return self.standing.ready_in_order()

    def in_order(self, lever_ids: Iterable[str]) -> list[str]:
        return self.standing.in_order(lever_ids)

    def runnable(self, states: Iterable[str] = ("ready", "stale")) -> list[str]:
        return self.standing.runnable(states)

    def next(self) -> str | None:
        return self.standing.next()

    def adoption_order(self) -> list[str]:
        return self.standing.adoption_order()

    def stack_order(self) -> list[str]:
        return self.standing.stack_order()

    def infra(self) -> dict[str, Any]:
        return self.standing.infra()

    def check_decidable(self, lever_id: str, outcome: str) -> None:
        self.standing.check_decidable(lever_id, outcome)

    def check_runnable(self, lever_id: str) -> None:
        self.standing.check_runnable(lever_id)

    # -- a watch's word on an adopted gain (Watched) -------------------------------------------------------------
    def adopted_figure(self, lever_id: str) -> tuple[float | None, int | None, str | None]:
        return self.watches.adopted_figure(lever_id)

    def eroded_text(self, lever_id: str) -> str | None:
        return self.watches.eroded_text(lever_id)

    def eroded_said(self, lever_id: str) -> Said | None:
        return self.watches.eroded_said(lever_id)

    # -- moving (RecordMoves) ------------------------------------------------------------------------------------
    def apply(self, table: str, record: Record, typed: Typed | None = None) -> list[Derived]:
        return self.moves.apply(table, record, typed)

    def run_ended(self, lever_id: str, status: str, verdict: str | None = None,
                  record: Record | None = None) -> list[Derived]:
        return self.moves.run_ended(lever_id, status, verdict, record)

    def refresh(self) -> None:
        self.moves.refresh()


__all__ = ["PlanMachine"]
