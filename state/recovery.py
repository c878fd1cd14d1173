"""What a writer does with the runs its store found in flight and whose process is gone (Store.recovered, `interrupted`
by the time the sequencer's catch-up has read them): end whatever their groups left running, stop a compare's job
left on a cluster, say what a killed screen measured, and finish from its passes' logs a run whose passes all ran."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from optseq.state.record_types import Run, as_
from optseq.state.screen_record import part as screen_part
from optseq.state.store.store import Store, StoreError

if TYPE_CHECKING:
    from optseq.state.runs.lever_run import RunReport


def recover(store: Store, warnings: list[str], finish: Callable[[int], RunReport | None]) -> None:
    """Runs the store found in flight with their process gone are `interrupted` now (their records came in
    with the catch-up): end whatever their groups left running. A run on a cluster goes on there,
    `detached`, until a run of its lever re-attaches to it. What it says goes to `warnings`; `finish` decides a
    run from its passes' logs (state/runs/finish_logs.py), None where it cannot."""
    if not store.recovered:
        return
    from optseq.state.runners import groups  # ctypes and signals: only when a run was found in flight

    for run in store.recovered:
        # the run id check keeps a recycled pgid of someone else's safe
        if run.status == "interrupted" and run.pgid and groups.group_alive(run.pgid, run_id=str(run.id)):
            groups.kill_group(run.pgid, run_id=str(run.id))
    for run in store.recovered:
        if run.status == "interrupted" and run.submission_id:
            _stop_left_job(store, warnings, run.id, run.submission_id)
        if run.status == "interrupted" and not run.lever:
            _screen_left(store, warnings, run.id)
        if run.status == "interrupted":
            _finish_from_logs(warnings, finish, run.id)


def _screen_left(store: Store, warnings: list[str], run_id: int) -> None:
    """A screen whose optseq died: what it measured, said once, as it is recorded (it is never re-attached)."""
    found = screen_part(as_(Run, store.get("runs", run_id) or {}).screen)
    if found is not None:
        blocks = len(found.blocks)
        warnings.append(f"run {run_id} (a screen of {', '.join(found.levers)}) is interrupted: "
                        f"its optseq stopped after {blocks} whole block{'s' * (blocks != 1)} "
                        f"({found.launches or 0} launches); nothing was decided, its levers are free "
                        "to run again")


def _stop_left_job(store: Store, warnings: list[str], run_id: int, submission_id: str) -> None:
    """A compare or a screen on a cluster whose optseq died: nobody re-attaches to either, so its job is stopped
    (best effort)."""
    from optseq.state.runners.ray_stop import stop_left

    noun = "a compare"
    try:
        run = as_(Run, store.get("runs", run_id) or {})
        address, run_dir = run.ray_address, store.run_dir(run_id)
        noun = "a screen" if run.kind == "screen" else noun
    except StoreError as exc:
        address, run_dir = None, None
        warnings.append(f"run {run_id}: {exc}")
    said = stop_left(address, submission_id, run_dir)
    warnings.append(f"run {run_id} ({noun}) is interrupted: its optseq stopped, and {noun} is not re-attached; {said}")


def _finish_from_logs(warnings: list[str], finish: Callable[[int], RunReport | None], run_id: int) -> None:
    """A run whose passes all ran before its optseq stopped is decided from their logs (state/runs/finish_logs)."""
    try:
        report = finish(run_id)
    except StoreError as exc:  # still no room, say: it stays interrupted, and the next writer tries again
        warnings.append(f"run {run_id} could not be finished from its logs: {exc}")
        return
    if report is not None:
        warnings.append(f"run {run_id} {report.lever}: its optseq stopped before recording its end; "
                        f"finished from its passes' logs: {report.message}")
