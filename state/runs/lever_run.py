"""One lever run end to end: record it, launch it (extending it for more pairs), judge it, decide."""
from __future__ import annotations

import json
import math
import os
import re
import statistics
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from state import runner
from state.sequencer import InputError
from state.store import utc_now

EventSink = Callable[[dict], None]
LogSink = Callable[[str], None]

EXIT = {"succeeded": 0, "inconclusive": 0, "failed": 1, "timeout": 1, "cancelled": 1,
        "unavailable": 3, "interrupted": 1}
"""CLI exit code for each way a run ends."""


class RunControl:
    """Cancels a run from any thread (the console's cancel key, the CLI's Ctrl-C)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._launcher: runner.Launcher | None = None
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            if self._launcher is not None:
                self._launcher.cancel()

    def attach(self, launcher: runner.Launcher) -> None:
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
    """Blocking. Store writes take the sequencer's lock; the command runs without it."""
    control = control or RunControl()
    lever = seq.lever(lever_id)
    with seq.lock:
        seq.check_runnable(lever_id)
        infra = seq.machine.infra()
        # the baseline is the stack without this lever, also when it is re-measured after adoption
        infra["adopted"] = [l for l in infra["adopted"] if l != lever_id]
        with seq.writing():
            record = seq.append("runs", {"lever": lever_id, "status": "running", "argv": list(lever.run),
                                         "pid": os.getpid(), "started": utc_now(), "infra": infra, "passes": 0})
        run_id = record["id"]
        run_dir = seq.store.run_dir(run_id)
    samples_file = run_dir / "samples.jsonl"
    collected = _Collected()
    rule = lever.rule
    requested = rule.repeats if rule else None
    pass_no, outcome, verdict, stats = 0, None, None, None
    while True:
        pass_no += 1
        outcome = _launch(seq, lever, run_id, run_dir, pass_no, requested, infra, collected, samples_file,
                          on_event, on_log, control)
        if outcome.status != "succeeded" or rule is None or lever.kind == "experiment" or lever.kind == "decision":
            break
        stats, verdict = _judge(collected, rule)
        if verdict.outcome != "inconclusive" or control.cancelled:
            break
        from state.runs.decide_rule import more_pairs

        more = more_pairs(stats, rule, stats.n)
        if more <= 0:
            break
        if on_log:
            on_log(f"[optseq] inconclusive after {stats.n} pairs ({verdict.reason}); asking for {more} more")
        requested = more
    with seq.lock:
        return _finish(seq, lever, run_id, outcome, collected, pass_no, samples_file, stats, verdict)


@dataclass
class _Collected:
    samples: list = field(default_factory=list)
    qualities: list = field(default_factory=list)
    criteria: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    ratios: dict = field(default_factory=dict)
    """(pass, pair) -> {arm: value}, for the running estimate."""


def _launch(seq, lever, run_id, run_dir: Path, pass_no, requested, infra, collected: _Collected,
            samples_file: Path, on_event, on_log, control: RunControl) -> runner.RunOutcome:
    env = {"OPTSEQ_RUN_ID": str(run_id), "OPTSEQ_INFRA": json.dumps(infra),
           "OPTSEQ_ARTIFACTS": str(run_dir / "artifacts")}
    if requested:
        env["OPTSEQ_REPEATS"] = str(requested)
    spec = runner.RunSpec(argv=list(lever.run), env=env, log_path=run_dir / f"pass-{pass_no}.log",
                          timeout_s=lever.timeout_s)
    launcher = runner.Launcher(spec)
    control.attach(launcher)

    def started(pid: int, pgid: int) -> None:
        with seq.lock, seq.writing():
            seq.store.update("runs", run_id, {"child_pid": pid, "pgid": pgid, "passes": pass_no})

    def event(ev: dict) -> None:
        kind = ev.get("event")
        # samples are tagged with their pass and kept on disk as they come; the runner's outcome
        # collects everything else, and is folded in once the pass ends
        if kind == "sample":
            ev = dict(ev, run=pass_no)
            collected.samples.append(ev)
            with open(samples_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(ev) + "\n")
        if on_event:
            on_event(ev)
            if kind == "sample":
                estimate = _running_estimate(collected, lever, ev)
                if estimate:
                    on_event(estimate)

    outcome = launcher.run(on_event=event, on_log=on_log, on_start=started)
    collected.qualities.extend(outcome.qualities)
    collected.criteria.extend(outcome.criteria)
    collected.env.update(outcome.env)
    return outcome


def _running_estimate(collected: _Collected, lever, ev: dict) -> dict | None:
    """Median ratio so far with its bootstrap CI once there are three pairs, for live displays."""
    rule = lever.rule
    if rule is None or ev.get("metric") != rule.metric or ev.get("arm") not in ("baseline", "candidate"):
        return None
    key = (ev["run"], ev.get("pair"))
    arms_so_far = collected.ratios.setdefault(key, {})
    arms_so_far[ev["arm"]] = float(ev["value"])
    if len(arms_so_far) < 2:
        return None  # only a completed pair moves the estimate
    ratios = []
    for arms in collected.ratios.values():
        a, b = arms.get("baseline"), arms.get("candidate")
        if a and b and a > 0 and b > 0:
            ratios.append(b / a if ev.get("higher_is_better", True) else a / b)
    if not ratios:
        return None
    estimate = {"event": "estimate", "estimate": statistics.median(ratios), "n": len(ratios), "metric": rule.metric,
                "ci_low": None, "ci_high": None}
    if len(ratios) >= 3:  # the same bootstrap as the final figures, on the pairs so far
        from state.runs.stats import median_ci

        low, high = median_ci([math.log(r) for r in ratios])
        estimate["ci_low"], estimate["ci_high"] = math.exp(low), math.exp(high)
    return estimate


def _judge(collected: _Collected, rule):
    from state.runs.decide_rule import decide
    from state.runs.stats import paired

    stats = paired(collected.samples, rule.metric)
    return stats, decide(stats, rule, collected.qualities)


def _finish(seq, lever, run_id, outcome: runner.RunOutcome, collected: _Collected, passes: int,
            samples_file: Path, stats, verdict) -> RunReport:
    status = outcome.status
    fields: dict[str, Any] = {
        "status": status, "ended": utc_now(), "exit_code": outcome.exit_code, "detail": outcome.detail,
        "passes": passes, "env": collected.env, "fingerprint": fingerprint(collected.env, seq.machine.infra()),
        "samples_file": str(samples_file) if collected.samples else None, "n_samples": len(collected.samples),
        "log": outcome.log_path, "warnings": outcome.warnings[:20],
    }
    if status in ("failed", "timeout"):
        fields["log_tail"] = outcome.log_tail
    if status == "unavailable":
        fields["reason"] = outcome.unavailable_reason
    summary: dict[str, Any] = {}
    decision = verdict_name = None
    why = outcome.detail
    message = f"{lever.id}: {outcome.detail}"
    rule = lever.rule
    try:
        if status == "succeeded" and rule is not None and lever.kind == "experiment":
            summary, decision, why = _experiment(collected, rule)
            verdict_name = decision or "inconclusive"
            message = f"{lever.id}: {why}"
        elif status == "succeeded" and rule is not None and lever.kind != "decision":
            if stats is None:
                stats, verdict = _judge(collected, rule)
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
        seq.machine.run_ended(lever.id, status)
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


def _experiment(collected: _Collected, rule):
    from state.runs.decide_rule import choose
    from state.runs.stats import arms

    table = arms(collected.samples, rule)
    chosen, why = choose(table, rule)
    summary = {"arms": table.to_dict(), "chosen": chosen, "reason": why, "rule": _rule_text(rule)}
    if chosen:
        summary["config"] = config_of(chosen)
    return summary, chosen, why


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
        return f"{rule.choose}" + (f" within {rule.max_cost_ratio:g}× {rule.cost_metric}" if rule.cost_metric else "")
    return f"{rule.metric} CI vs {rule.min_speedup:g}×"


def fingerprint(env: dict, infra: dict) -> dict:
    """What a number was measured on: device, library versions, workload code, infra state."""
    device = env.get("gpu") or env.get("cpu") or env.get("device")
    versions = {k: env[k] for k in ("python", "torch", "cuda", "bot_backend") if k in env}
    return {"device": device, "versions": versions, "code_hash": env.get("code_hash"), "infra": infra}
