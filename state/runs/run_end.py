"""The one place a run record is finished, whatever ran: a lever's run or a watch (run_record), a compare
(compare_run), a screen and its confirmation (screen_finish).

Each kind says what differs (its last fields, the levers its end moves, the decisions it came to); this writes it
the one way, in one transaction: the record's status, end and verdict, its row in the index the views read, each
lever moved as the record moves it on replay, the criteria and decisions refused in a note rather than lost, and
the stack's staleness marks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from optseq.state.errors import InputError
from optseq.state.runs.host import Record, RunHost
from optseq.state.store.records import utc_now


def ended(started: object) -> str:
    """The wall-clock end, never before the start (`started`, the record's): a clock set back during the run does
    not reverse it (its length is elapsed_s, on the monotonic clock)."""
    now, begun = utc_now(), str(started or "")
    return max(now, begun) if begun[:4].isdigit() else now


@dataclass(frozen=True)
class Move:
    """A lever whose state the run's end moves, with the verdict it moves on."""

    lever: str
    verdict: str | None
    record: Record = field(default_factory=dict)
    """What the lever's copy of the final record says beside the record's fields (a screen's kind, each lever's
    own why as its detail)."""


@dataclass(frozen=True)
class Decision:
    """A decision the run came to by a lever's rule."""

    lever: str
    outcome: str
    why: str
    rule: str
    runs: tuple[int, ...]
    stats: dict | None = None
    config: dict | None = None
    why_said: dict | None = None
    source: str | None = None


@dataclass
class Ending:
    """How a run ended, as its kind says it."""

    run_id: int
    status: str
    verdict: str | None
    fields: Record
    """The rest of the record's last fields (status, ended and verdict are set here)."""
    moves: tuple[Move, ...] = ()
    criteria: tuple[tuple[str, dict], ...] = ()
    """(lever, criterion event) a decision lever's run reported."""
    decisions: tuple[Decision, ...] = ()
    said: tuple[str, ...] = ()
    """Notes said with the run's message (another testbed's numbers decide nothing here)."""
    kept: tuple[str, ...] = ()
    """Notes kept on the record only, before the others (what the launches left running: each launch said it)."""
    name_refused: bool = False
    """A refused decision is noted with its lever's id (a screen decides several)."""
    marks_stack: bool = True


@dataclass
class Finished:
    record: Record
    """The record's last fields as written."""
    said: list[str]
    """The notes the run's message ends with: what was refused, and why."""
    decided: dict[str, str]
    """lever -> the outcome decided."""


def finish_run(host: RunHost, end: Ending) -> Finished:
    """Write how the run ended and what it decided, in one transaction of the host's; returns what was written."""
    with host.lock:
        fields: Record = {"status": end.status, "ended": ended(host.run(end.run_id).started),
                          **end.fields, "verdict": end.verdict}
        said, decided = list(end.said), {}
        with host.writing():
            host.update(end.run_id, fields)
            for move in end.moves:
                host.end_run(move.lever, end.status, move.verdict,
                             {"id": end.run_id, "lever": move.lever, **fields, **move.record})
            # validation refuses before anything is written, so a refused criterion or decision leaves the run's
            # own record intact; the refusal is kept on the run
            for lever_id, crit in end.criteria:
                try:
                    host.record_criterion(lever_id, crit)
                except InputError as exc:
                    said.append(f"criterion event not recorded: {exc}")
            for one in end.decisions:
                try:
                    host.decide(one.lever, one.outcome, why=one.why, rule=one.rule, runs=one.runs, stats=one.stats,
                                config=one.config, why_said=one.why_said, source=one.source)
                    decided[one.lever] = one.outcome
                except InputError as exc:
                    said.append(f"{one.lever} not decided: {exc}" if end.name_refused else f"not decided: {exc}")
            notes = [*end.kept, *said]
            if notes:
                host.update(end.run_id, {"notes": notes})
            if end.marks_stack:
                host.mark_stack_changes(end.run_id, fields.get("fingerprint") or {}, fields.get("testbed"))
    return Finished(fields, said, decided)

