"""One lever run end to end: record it, launch it (extending it for more pairs), judge it, decide."""
from __future__ import annotations

import json
import os
import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from optseq.state.runners.interface import RunOutcome, RunSpec, store_tag
from optseq.state.errors import InputError
from optseq.state.store.store import utc_now

EventSink = Callable[[dict], None]
LogSink = Callable[[str], None]

EXIT = {"succeeded": 0, "inconclusive": 0, "failed": 1, "timeout": 1, "cancelled": 1,
        "unavailable": 3, "interrupted": 1}
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
        return EXIT.get(self.status, 1)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "lever": self.lever, "status": self.status, "verdict": self.verdict,
                "decision": self.decision, "message": self.message, "summary": self.summary}


def run_lever(seq, lever_id: str, *, on_event: EventSink | None = None, on_log: LogSink | None = None,
              control: RunControl | None = None) -> RunReport:
    """Blocking. Store writes take the sequencer's lock; the command runs without it.

    A/B levers run in passes: the first asks for the rule's `repeats` pairs, and while the sequential
    bounds straddle the threshold each further pass asks for more, up to `max_repeats`. The whole run,
    every pass together, lives within the lever's `timeout_s`; a pass that adds no countable pair ends
    the run as failed, so a command that reports the wrong metric is never relaunched.
    """
    control = control or RunControl()
    lever = seq.lever(lever_id)
    from optseq.state.runners.interface import RunnerError

    try:
        runner = seq.runner  # before the record: a runner that cannot be set up refuses the run, in one line
    except RunnerError as exc:
        raise InputError(str(exc)) from None
    hold = seq.hold_lever(lever_id)  # this run holds its lever, not the store: other levers run elsewhere
    try:
        with seq.lock:
            with seq.writing():
                seq.check_runnable(lever_id)  # after the catch-up: the state as every process left it
                detached = next((a for a in seq.detached_runs() if a.get("lever") == lever_id), None)
                if detached is not None:
                    record = seq.store.get("runs", detached["run"])
                    resume = Resume.of(record)
                    try:
                        runner = resume.runner(seq)
                    except RunnerError as exc:
                        raise InputError(f"run {record['id']} of {lever_id} cannot be re-attached: {exc}") from None
                    seq.store.update("runs", record["id"], {"pid": os.getpid(), "reattached": utc_now()})
                else:
                    resume = None
                    infra = seq.machine.infra()
                    # the baseline is the stack without this lever, also when it is re-measured after adoption
                    infra["adopted"] = [l for l in infra["adopted"] if l != lever_id]
                    fields = {"lever": lever_id, "status": "running", "argv": list(lever.run), "pid": os.getpid(),
                              "started": utc_now(), "infra": infra, "passes": 0, "runner": runner.name}
                    if lever.arms is not None:
                        fields["arms"] = lever.arms.to_dict(stack_env(seq.plan, infra["adopted"]))
                    record = seq.append("runs", fields)
            run_id = record["id"]
            run_dir = seq.store.run_dir(run_id)
        go = _Go(runner=runner, on_event=on_event, on_log=on_log or (lambda line: None), control=control,
                 arms=record.get("arms"), resume=resume)
        return _run(seq, lever, run_id, run_dir, record["infra"], go)
    finally:
        hold.release()


@dataclass(frozen=True)
class Resume:
    """A run re-attached after its optseq died: the passes it finished are read back from their logs, and
    the pass that was in flight is followed again from its job's first line."""

    attach_pass: int
    elapsed_s: float
    """Time the run has had already: its timeout counts from its start, not from the re-attach."""
    address: str | None

    @classmethod
    def of(cls, record: dict) -> "Resume":
        import datetime as dt

        started = dt.datetime.fromisoformat(record["started"])
        elapsed = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
        return cls(attach_pass=max(1, int(record.get("passes") or 1)), elapsed_s=max(elapsed, 0.0),
                   address=record.get("ray_address"))

    def runner(self, seq):
        """The cluster the run was sent to, whatever this optseq would send new runs to."""
        from dataclasses import replace

        from optseq.state.runners.interface import configure, make

        current = seq.runner
        if current.name == "ray" and current.config.address == self.address:
            return current
        config = replace(configure(seq.plan.runner), kind="ray", address=self.address)
        return make(config)


@dataclass
class _Go:
    """How a run is carried out: where, who hears about it, who may stop it."""

    runner: Any
    on_event: EventSink | None
    on_log: LogSink
    control: RunControl
    arms: dict | None = None
    resume: Resume | None = None


def _run(seq, lever, run_id: int, run_dir: Path, infra: dict, go: _Go) -> RunReport:
    rule = lever.rule
    tally = _Collected(samples_file=run_dir / "samples.jsonl")
    passes = None
    if rule is not None and lever.kind == "experiment":
        from optseq.state.runs.passes import BlockPasses

        passes = BlockPasses(rule)
    elif rule is not None and lever.kind != "decision":
        from optseq.state.runs.passes import ABPasses

        passes = ABPasses(rule)
        tally.book = passes.book
    note = go.on_log
    requested = rule.repeats if rule else None
    started = time.monotonic() - (go.resume.elapsed_s if go.resume else 0.0)
    if go.resume:
        tally.samples_file.unlink(missing_ok=True)  # rebuilt from the passes' logs as they are read back
    pass_no, outcome, step = 0, None, None
    while True:
        pass_no += 1
        remaining = lever.timeout_s - (time.monotonic() - started)
        if go.resume and pass_no < go.resume.attach_pass:
            outcome = _replay(run_dir, pass_no, _Pass(seq, lever, run_id, pass_no, requested, tally, go))
        else:
            outcome = _launch(seq, lever, run_id, run_dir, pass_no, requested, infra, tally, remaining, go)
        if outcome.status != "succeeded" or passes is None:
            break
        # an A/B pass is counted on its own; an experiment compares every block so far
        samples = tally.pass_samples(pass_no) if tally.book is not None else tally.samples
        step = passes.after_pass(samples, tally.qualities, elapsed_s=time.monotonic() - started,
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
    with seq.lock:
        return _finish(seq, lever, run_id, outcome, tally, pass_no, step)


@dataclass
class _Collected:
    samples_file: Path
    samples: list = field(default_factory=list)
    qualities: list = field(default_factory=list)
    criteria: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    """Every pass's warnings: the protocol's and the pair accounting's."""
    passes: list = field(default_factory=list)
    """Per pass: pairs asked for, pairs counted, warnings."""
    book: Any = None
    """The PairBook of an A/B lever's rule metric."""
    live_n: int = 0
    """Pairs the last live estimate was shown for."""

    def pass_samples(self, pass_no: int) -> list:
        return [s for s in self.samples if s.get("run") == pass_no]


@dataclass
class _Pass:
    """One pass's events as they come: samples tagged with their pass and kept on disk, live estimates."""

    seq: Any
    lever: Any
    run_id: int
    pass_no: int
    requested: int | None
    collected: "_Collected"
    go: _Go

    def event(self, ev: dict) -> None:
        kind, collected = ev.get("event"), self.collected
        # the runner's outcome collects everything else, and is folded in once the pass ends
        if kind == "sample":
            ev = dict(ev, run=self.pass_no)
            collected.samples.append(ev)
            with open(collected.samples_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(ev) + "\n")
        on_event = self.go.on_event
        if on_event:
            on_event(ev)
            if kind == "sample" and collected.book is not None and ev.get("metric") == collected.book.metric:
                estimate = _running_estimate(collected, self.lever.rule, self.pass_no, self.requested)
                if estimate:
                    on_event(estimate)

    def started(self, fields: dict) -> None:
        # what finds the run again: a pid and process group here, a Ray submission id on a cluster
        with self.seq.lock, self.seq.writing():
            self.seq.store.update("runs", self.run_id, {**fields, "passes": self.pass_no})

    def fold(self, outcome: RunOutcome) -> RunOutcome:
        collected = self.collected
        collected.qualities.extend(outcome.qualities)
        collected.criteria.extend(outcome.criteria)
        collected.env.update(outcome.env)
        collected.warnings.extend(f"pass {self.pass_no}: {w}" for w in outcome.warnings)
        return outcome


def _launch(seq, lever, run_id, run_dir: Path, pass_no, requested, infra, collected: _Collected,
            remaining_s: float, go: _Go) -> RunOutcome:
    env = {"OPTSEQ_RUN_ID": str(run_id), "OPTSEQ_INFRA": json.dumps(infra),
           "OPTSEQ_ARTIFACTS": str(run_dir / "artifacts"), "OPTSEQ_PASS": str(pass_no)}
    if go.arms is not None:
        env["OPTSEQ_ARMS"] = json.dumps(go.arms)
    if requested:
        env["OPTSEQ_REPEATS"] = str(requested)
    spec = RunSpec(argv=list(lever.run), env=env, log_path=run_dir / f"pass-{pass_no}.log",
                          timeout_s=max(remaining_s, 0.001))
    attach = {"attach": True} if go.resume and pass_no == go.resume.attach_pass else {}
    launcher = go.runner.launch(spec, run_id=run_id, attempt=pass_no, resources=dict(lever.resources),
                                tag=store_tag(seq.store.path.parent), **attach)
    go.control.attach(launcher)
    one = _Pass(seq, lever, run_id, pass_no, requested, collected, go)
    return one.fold(launcher.run(on_event=one.event, on_log=go.on_log, on_start=one.started))


def _replay(run_dir: Path, pass_no: int, one: _Pass) -> RunOutcome:
    """A pass that ended before its optseq died, read back from its log as if it streamed now."""
    from optseq.state.runners.protocol import Transcript

    started = time.monotonic()
    transcript = Transcript(None, one.event, None)
    try:
        transcript.feed((run_dir / f"pass-{pass_no}.log").read_bytes())
    except OSError as exc:
        detail = f"the log of pass {pass_no} cannot be read back ({exc.strerror}); not the lever's failure"
        return RunOutcome.of(transcript, "interrupted", detail, started=started)
    transcript.finish()
    one.go.on_log(f"[optseq] pass {pass_no}: {len(transcript.samples)} samples read back from its log")
    return one.fold(RunOutcome.of(transcript, "succeeded", "read back from its log", started=started,
                                         log_path=run_dir / f"pass-{pass_no}.log"))


LIVE_BOUNDS_UP_TO = 100
"""Pairs up to which the live estimate recomputes its bounds at every pair; beyond, every 25th pair."""


def _running_estimate(collected: _Collected, rule, pass_no: int, requested) -> dict | None:
    """The estimate so far, with the same sequential bounds a look at this point would have, for live displays.

    Only a newly completed pair moves it; the pair accounting of the pass under way is previewed, not kept.
    """
    from optseq.state.runs.stats import summarise

    preview = collected.book.add_pass(pass_no, collected.pass_samples(pass_no), requested, commit=False)
    n = len(collected.book.pairs) + len(preview.fresh)
    if not preview.fresh or n == collected.live_n:
        return None
    collected.live_n = n
    ratios = collected.book.ratios(preview.fresh)
    estimate = {"event": "estimate", "estimate": statistics.median(ratios), "n": n, "metric": rule.metric,
                "ci_low": None, "ci_high": None}
    if n <= LIVE_BOUNDS_UP_TO or n % 25 == 0:
        stats = summarise(collected.book, budget=rule.max_repeats, threshold=rule.min_speedup, extra=preview.fresh)
        estimate["ci_low"], estimate["ci_high"] = stats.ci_low, stats.ci_high
    return estimate


MAX_STORED_WARNINGS = 40
"""Warnings kept on the run record; the log file has every line."""


def _finish(seq, lever, run_id, outcome: RunOutcome, collected: _Collected, passes: int,
            step) -> RunReport:
    failure = step.failure if step else None
    # a command that exits cleanly but brings no countable pair has failed as a lever run
    status = "failed" if failure else outcome.status
    detail = failure or outcome.detail
    warnings = collected.warnings[:MAX_STORED_WARNINGS]
    if len(collected.warnings) > MAX_STORED_WARNINGS:
        warnings.append(f"... and {len(collected.warnings) - MAX_STORED_WARNINGS} more (see the log)")
    fields: dict[str, Any] = {
        "status": status, "ended": utc_now(), "exit_code": outcome.exit_code, "detail": detail,
        "passes": passes, "env": collected.env, "fingerprint": fingerprint(collected.env, seq.machine.infra()),
        "samples_file": str(collected.samples_file) if collected.samples else None,
        "n_samples": len(collected.samples), "log": outcome.log_path, "warnings": warnings,
        "pass_counts": collected.passes,
    }
    if status in ("failed", "timeout"):
        fields["log_tail"] = outcome.log_tail
    if status == "unavailable":
        fields["reason"] = outcome.unavailable_reason
    summary: dict[str, Any] = {}
    decision = verdict_name = None
    why = detail
    message = f"{lever.id}: {detail}"
    rule = lever.rule
    try:
        if status == "succeeded" and step is not None and step.error:
            raise ValueError(step.error)
        if status == "succeeded" and rule is not None and lever.kind == "experiment":
            summary, decision, why = _experiment(collected, rule, step.result)
            verdict_name = decision or "inconclusive"
            message = f"{lever.id}: {step.result.outcome.replace('_', ' ')} — {why}"
        elif status == "succeeded" and rule is not None and lever.kind != "decision":
            stats, verdict = step.stats, step.verdict
            summary = {"stats": stats.to_dict(), "verdict": verdict.to_dict(), "rule": _rule_text(rule)}
            verdict_name = verdict.outcome
            decision = verdict.outcome if verdict.outcome in ("adopt", "reject") else None
            message = f"{lever.id}: {verdict.outcome} — {verdict.reason}"
            why = verdict.reason
    except ValueError as exc:  # samples the statistics refuse (StatsError): the run stands, undecided
        summary = {"error": str(exc)}
        verdict_name = "inconclusive"
        message = f"{lever.id}: measured, but the samples could not be judged: {exc}"
    fields["summary"] = summary
    fields["verdict"] = verdict_name
    with seq.writing():
        seq.store.update("runs", run_id, fields)
        seq.run_ended(lever.id, status, verdict_name, {"id": run_id, "lever": lever.id, **fields})
        seq.fire_points("runs", {"lever": lever.id, "status": status})
        notes = []
        # validation refuses before anything is written, so a refused criterion or decision
        # leaves the run's own record intact; the refusal is kept on the run
        for crit in collected.criteria:
            try:
                seq.record_criterion_in_batch(lever.id, crit.get("candidate"), crit.get("criterion"),
                                              crit.get("outcome"), crit.get("evidence", ""))
            except InputError as exc:
                notes.append(f"criterion event not recorded: {exc}")
        if decision:
            try:
                seq.decide_in_batch(lever.id, decision, why=why, auto=True, rule=_rule_text(rule),
                                    runs=(run_id,), stats=summary.get("stats"), config=summary.get("config"))
            except InputError as exc:
                notes.append(f"not decided: {exc}")
                decision = None
        if notes:
            seq.store.update("runs", run_id, {"notes": notes})
            message += " (" + "; ".join(notes) + ")"
        seq.mark_stack_changes(run_id, fields["fingerprint"])
    return RunReport(run_id=run_id, lever=lever.id, status=status, message=message, summary=summary,
                     decision=decision, verdict=verdict_name)


def _experiment(collected: _Collected, rule, result):
    """The best-of-N comparison's summary: per-config figures for display, the MCB result that decides."""
    from optseq.state.runs.stats import arms

    table = arms(collected.samples, rule)
    summary = {"arms": table.to_dict(), "chosen": result.chosen, "reason": result.reason, "rule": _rule_text(rule),
               "best_of": result.to_dict()}
    if result.chosen:
        summary["config"] = config_of(result.chosen)
    return summary, result.chosen, result.reason


def stack_env(plan, adopted) -> dict[str, str]:
    """The toggles of the adopted command-pair levers, in stack order: both arms of the next lever run with them.

    Only a lever whose arms are one command told apart by its environment contributes: its candidate_env is
    all it takes to turn it on. Two different commands cannot be composed into a third, so those levers
    reach later arms through OPTSEQ_INFRA only.
    """
    env: dict[str, str] = {}
    for lever_id in adopted:
        arms = plan.lever(lever_id).arms if plan.has_lever(lever_id) else None
        if arms is not None and arms.baseline == arms.candidate:
            env.update(dict(arms.candidate_env))
    return env


def config_of(name: str) -> dict:
    """`h1024x6` → hidden 1024, layers 6: the model config the next runs get in OPTSEQ_INFRA."""
    match = re.fullmatch(r"h(\d+)x(\d+)", name)
    config: dict[str, Any] = {"name": name}
    if match:
        config.update(hidden=int(match.group(1)), layers=int(match.group(2)))
    return config


def _rule_text(rule) -> str:
    if rule is None:
        return "manual"
    if rule.choose:
        return f"best of N on {rule.choose}" + (f", margin {rule.margin:g}" if rule.margin else "") + (
            f", within {rule.max_cost_ratio:g}× {rule.cost_metric}" if rule.cost_metric else "")
    return f"{rule.metric} sequential bound vs {rule.min_speedup:g}×"


def fingerprint(env: dict, infra: dict) -> dict:
    """What a number was measured on: device, library versions, workload code, infra state."""
    device = env.get("gpu") or env.get("cpu") or env.get("device")
    versions = {k: env[k] for k in ("python", "torch", "cuda", "bot_backend") if k in env}
    found = {"device": device, "versions": versions, "code_hash": env.get("code_hash"), "infra": infra}
    if env.get("workload"):
        found["workload"] = env["workload"]
    return found
