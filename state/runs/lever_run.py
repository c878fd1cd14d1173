"""One lever run end to end: record it, launch it (extending it for more pairs), judge it, decide."""
from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optseq.state.errors import InputError
from optseq.state.exits import Exit
from optseq.state.kinds import LeverVerdict, RunStatus
from optseq.state.runs.measured_on import stack
from optseq.state.plan.model import Lever
from optseq.state.record_types import Summary, figures_of
from optseq.state.runners.interface import RunOutcome
from optseq.state.runs.host import RunHost
from optseq.state.runs.run_pass import (Collected, EventSink, Go, LogSink, Pass, Resume, experiment_length, launch,
                                         launch_token, replay)
from optseq.state.runs.run_record import finish
from optseq.state.store.records import utc_now
from optseq.state.store.storage import StoreUnwritable

if TYPE_CHECKING:  # the pass planner, imported when a run measures
    from optseq.state.runs.passes import Step

EXIT: dict[str, Exit] = {
    RunStatus.SUCCEEDED: Exit.OK, LeverVerdict.INCONCLUSIVE: Exit.OK, RunStatus.FAILED: Exit.RUN_FAILED,
    RunStatus.TIMEOUT: Exit.RUN_FAILED, RunStatus.CANCELLED: Exit.RUN_FAILED, RunStatus.UNAVAILABLE: Exit.NOTHING,
    RunStatus.INTERRUPTED: Exit.RUN_FAILED}
"""CLI exit code for each way a run ends."""


class RunControl:
    """Cancels a run from any thread (the console's cancel key, the CLI's Ctrl-C)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._launcher = None
        """The pass in flight: a runner's Launch (anything with cancel())."""
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            if self._launcher is not None:
                self._launcher.cancel()

    def attach(self, launcher) -> None:
        with self._lock:
            self._launcher = launcher
            if self.cancelled:
                launcher.cancel()


def _check_decidable(lever) -> None:
    """A rule whose launch budget no look can decide with is refused before anything runs or is stored."""
    from optseq.state.runs.launches import launch_plan
    from optseq.state.runs.passes import replicate_of, sequential_floor

    rule = lever.rule
    if rule is None or rule.choose or lever.kind in ("experiment", "decision") or replicate_of(lever) != "launch":
        return
    plan = launch_plan(rule)
    if not plan.decidable:
        floor = sequential_floor()
        raise InputError(f"{lever.id}: its rule allows {plan.budget} launch{'es' * (plan.budget != 1)} "
                         f"(max_repeats = {rule.max_repeats}"
                         + (f", max_launches = {rule.max_launches}" if rule.max_launches else "")
                         + f"), too few for any decision: the test counts launches and needs {floor} on one side "
                           f"at one look; raise max_repeats{' and max_launches' if rule.max_launches else ''} "
                           f"to at least {floor}")


@dataclass
class RunReport:
    run_id: int
    lever: str
    status: str
    """succeeded | failed | timeout | cancelled | unavailable (the run); `verdict` says what it decided."""
    message: str
    summary: dict = field(default_factory=dict)
    decision: str | None = None
    verdict: str | None = None
    """adopt | reject | inconclusive | a chosen config | None."""

    @property
    def exit_code(self) -> int:
        return EXIT.get(self.status, Exit.RUN_FAILED)

    @property
    def figures(self) -> Summary:
        """The summary as the run's end stored it, as its readers read a stored one."""
        return figures_of(self.summary)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "lever": self.lever, "status": self.status, "verdict": self.verdict,
                "decision": self.decision, "message": self.message, "summary": self.summary}


def run_lever(host: RunHost, lever_id: str, *, on_event: EventSink | None = None, on_log: LogSink | None = None,
              control: RunControl | None = None, watch: bool = False) -> RunReport:
    """Blocking. Store writes take the sequencer's lock; the command runs without it.

    A/B levers run in passes: the first asks for the rule's `repeats` pairs, and while the sequential
    bounds straddle the threshold each further pass asks for more, up to `max_repeats`. The whole run,
    every pass together, lives within the lever's `timeout_s`; a pass that adds no countable pair ends
    the run as failed, so a command that reports the wrong metric is never relaunched.
    """
    control = control or RunControl()
    lever = host.lever(lever_id)
    _check_decidable(lever)
    if watch:
        host.check_watchable(lever_id)
    from optseq.state.runners.interface import RunnerError

    try:
        runner = host.runner  # before the record: a runner that cannot be set up refuses the run, in one line
    except RunnerError as exc:
        raise InputError(str(exc)) from None
    hold = host.hold(lever_id)  # this run holds its lever, not the store: other levers run elsewhere
    trees = contextlib.ExitStack()  # its worktrees, held while it runs, whoever prunes the cache
    try:
        reattach = any(a.lever == lever_id for a in host.detached_runs())
        code, unmade = (_code(host, lever, trees) if lever.arms is not None and lever.arms.branch and not reattach
                        else (None, None))
        with host.lock:
            with host.writing():
                host.check_runnable(lever_id)  # after the catch-up: the state as every process left it
                detached = next((a for a in host.detached_runs() if a.lever == lever_id), None)
                resume: Resume | None = None
                if detached is not None:
                    record = host.record(detached.run)
                    resume = Resume.of(record)
                    try:
                        runner = resume.runner(host)
                    except RunnerError as exc:
                        raise InputError(f"run {record['id']} of {lever_id} cannot be re-attached: {exc}") from None
                    host.update(record["id"], {"pid": os.getpid(), "reattached": utc_now()})
                else:
                    infra = host.machine.infra()
                    # the baseline is the stack without this lever, also when it is re-measured after adoption
                    infra["adopted"] = [l for l in infra["adopted"] if l != lever_id]
                    fields: dict[str, Any] = {
                        "lever": lever_id, "status": "running", "argv": list(lever.run), "pid": os.getpid(),
                        "started": utc_now(), "infra": infra, "passes": 0, "runner": runner.name,
                        "testbed": host.testbed}
                    if watch:
                        host.check_watchable(lever_id)  # again, after the catch-up: a decision may have come
                        fields["watch"] = True
                    if lever.arms is not None:
                        fields["arms"] = lever.arms.to_dict(stack(host.plan, host.machine, lever_id))
                    if code is not None:
                        fields["code"] = code[0]
                        if code[1] is not None:
                            fields["arms"]["trees"] = code[1]
                    record = host.append_run(fields)
                # inside the transaction: a run whose folder cannot be made never started, and is not recorded
                run_dir = host.run_dir(record["id"])
            run_id = record["id"]
        go = Go(runner=runner, on_event=on_event, on_log=on_log or (lambda line: None), control=control,
                arms=record.get("arms"), resume=resume)
        if unmade is not None:
            return _unmade(host, lever, run_id, run_dir, unmade_outcome(unmade, control))
        if code is None:
            from optseq.state.code.worktrees import held, using

            trees.enter_context(using(held(record.get("arms"))))  # a re-attached run's
        return _run(host, lever, run_id, run_dir, record["infra"], go)
    finally:
        trees.close()
        hold.release()


def _code(host: RunHost, lever: Lever, hold: contextlib.ExitStack) -> tuple[tuple[dict, dict | None], str | None]:
    """A branch lever's commits as its run starts and the arms driver's trees for them (worktrees made now), or
    why they could not be made. InputError, before anything is recorded, for what the plan or the user got wrong: a
    ref that names nothing, a repository without commits, a candidate already in the baseline, a lever whose branch
    has landed. A checkout git fails to make (a full disk, a cache that cannot be written, a commit git refuses
    to check out) is the run's failure instead: its refs named commits, and the run is recorded failed with it."""
    from optseq.state.code import branch

    host.check_runnable(lever.id)  # before any checkout: a lever that cannot run costs no worktree
    arms = lever.arms
    if arms is None or arms.candidate_ref is None:
        raise ValueError(f"{lever.id}: not a branch lever")  # run_lever asks for the code of a branch lever alone
    commits = branch.resolve(arms.cwd, arms.baseline_ref, arms.candidate_ref, lever.id)
    branch.check_apart(commits, lever.id)
    try:
        return (commits.to_dict(), branch.trees(commits, arms.setup, hold)), None
    except InputError as exc:
        return (commits.to_dict(), None), str(exc)


def unmade_outcome(why: str, control: RunControl):
    """How a run whose worktrees could not be made ended: failed with the cause as its line, or cancelled where a
    signal came during the checkout (a hang-up ends the git of optseq's process group with optseq's run)."""
    if control.cancelled:
        why = f"cancelled during its checkout ({why})"
    return RunOutcome(status="cancelled" if control.cancelled else "failed", detail=why, log_tail=[why])


def _unmade(host: RunHost, lever: Lever, run_id: int, run_dir: Path, outcome: RunOutcome) -> RunReport:
    """A run whose worktrees could not be made: recorded as it ended, nothing launched."""
    with host.lock:
        return RunReport(**finish(host, lever, run_id, outcome, Collected(samples_file=run_dir / "samples.jsonl",
                                                                         elapsed_s=0.0), 0, None))


def _run(host: RunHost, lever: Lever, run_id: int, run_dir: Path, infra: dict, go: Go) -> RunReport:
    try:
        outcome, tally, pass_no, step, started = measure(host, lever, run_id, run_dir, infra, go)
    except OSError as exc:  # the run's own folder is full: a pass's log or samples cannot be written
        where = exc.filename or f"the pass's log in {run_dir}"
        raise StoreUnwritable(f"run {run_id} {lever.id}: cannot write {where}: {exc.strerror or exc}; the pass "
                              f"under way is lost, the passes logged whole before it are in {run_dir}, and the next "
                              "optseq that can write ends the run as interrupted") from None
    with host.lock:
        tally.elapsed_s = time.monotonic() - started
        try:
            report = RunReport(**finish(host, lever, run_id, outcome, tally, pass_no, step))
        except StoreUnwritable as exc:
            raise StoreUnwritable(f"run {run_id} {lever.id}: measured ({pass_no} pass{'es' * (pass_no != 1)}), "
                                  f"but its end cannot be recorded: {exc}; its passes' logs are in {run_dir}, and "
                                  "the next optseq that can write finishes the run from them") from None
    stats = report.figures.stats
    for said in (stats.order, stats.stalls) if stats is not None else ():  # what the figures rest on, said where
        if said:  # the run is watched
            go.on_log(f"[optseq] {said}")
    return report


def measure(host: RunHost, lever: Lever, run_id: int, run_dir: Path, infra: dict,
            go: Go) -> tuple[RunOutcome, Collected, int, Step | None, float]:
    """The run's passes, launched (or read back) until its rule stops asking: (the last pass's outcome, what was
    collected, passes, the last step, the run's monotonic start)."""
    from optseq.state.runs.passes import ABPasses, BlockPasses

    rule = lever.rule
    tally = Collected(samples_file=run_dir / "samples.jsonl")
    passes: ABPasses | BlockPasses | None = None
    if rule is not None and lever.kind == "experiment":
        passes = BlockPasses(rule)
    elif rule is not None and lever.kind != "decision":
        # a command-pair lever runs every arm as its own process: its pairs are independent draws; a bench
        # measures its pairs inside one process, which gives them all that launch's speed
        passes = ABPasses(rule, replicate="pair" if lever.arms is not None else "launch")
        tally.book, tally.replicate, tally.budget = passes.book, passes.replicate, passes.budget
    note = go.on_log
    requested = passes.requested if passes is not None else (rule.repeats if rule else None)
    tag, begun = host.store_tag, host.run(run_id).started or ""
    started = time.monotonic() - (go.resume.elapsed_s if go.resume else 0.0)
    if go.resume:
        tally.samples_file.unlink(missing_ok=True)  # rebuilt from the passes' logs as they are read back
    if not go.resume and (length := experiment_length(lever, host.machine.runs.recent.get(lever.id, []))):
        note(length)
    pass_no, step = 0, None
    while True:
        pass_no += 1
        remaining = lever.timeout_s - (time.monotonic() - started)
        one = Pass(host, lever, run_id, pass_no, requested, tally, go, token=launch_token(tag, run_id, begun, pass_no),
                   elapsed_s=time.monotonic() - started)
        replayed = bool(go.resume and pass_no < go.resume.attach_pass)
        if replayed:
            outcome = replay(run_dir, pass_no, one)
        elif go.resume and go.resume.finish_only:
            raise Unfinishable(f"its {pass_no - 1} passes read back ask for more pairs")
        else:
            outcome = launch(one, run_dir, infra, remaining)
        if outcome.status != "succeeded" or passes is None:
            break
        # an A/B pass is counted on its own; an experiment compares every block so far
        if isinstance(passes, ABPasses):
            step = passes.after_pass(tally.pass_samples(pass_no), tally.qualities,
                                     elapsed_s=time.monotonic() - started, timeout_s=lever.timeout_s,
                                     cancelled=go.control.cancelled, token=one.token,
                                     # a pass read back from its log says nothing of what a launch costs
                                     duration_s=None if replayed else outcome.duration_s,
                                     pair_s=None if replayed else one.pair_s())
        else:
            step = passes.after_pass(tally.samples, tally.qualities, elapsed_s=time.monotonic() - started,
                                     timeout_s=lever.timeout_s, cancelled=go.control.cancelled)
        tally.passes.append(step.counts)
        for warning in step.warnings:
            tally.warnings.append(warning)
            note(f"[optseq] {warning}")
        if step.failure:
            note(f"[optseq] {step.failure}: the run fails rather than asking again")
        elif step.note:
            note(f"[optseq] {step.note}")
        if not step.more:
            break
        requested = step.more
    return outcome, tally, pass_no, step, started


class Unfinishable(Exception):
    """A run read back from its logs cannot be decided without launching more."""
