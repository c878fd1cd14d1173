"""One pass of a lever run: launched, or read back from its log after a re-attach, its events kept as they come."""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from collections.abc import Sequence

from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.plan.model import Lever
from optseq.state.runners.interface import RunOutcome, RunSpec
from optseq.state.runs.host import RunHost, Runner

EventSink = Callable[[dict], None]
LogSink = Callable[[str], None]


@dataclass(frozen=True)
class Resume:
    """A run re-attached after its optseq died: the passes it finished are read back from their logs, and
    the pass that was in flight is followed again from its job's first line."""

    attach_pass: int
    elapsed_s: float
    """Time the run has had already: its timeout counts from its start, not from the re-attach. Taken from the
    monotonic time the run had when its last pass started (`elapsed_at_pass`), so a wall-clock jump since cannot
    time a healthy job out; the pass in flight's own time until the re-attach is not counted."""
    address: str | None
    finish_only: bool = False
    """Read back every pass that ran and decide from them, launching none (a run whose end was never recorded)."""

    @classmethod
    def of(cls, record: dict) -> "Resume":
        import datetime as dt

        elapsed = record.get("elapsed_at_pass")
        if not isinstance(elapsed, (int, float)) or isinstance(elapsed, bool):
            # a run from before elapsed_at_pass was kept: the wall clock is all there is
            started = dt.datetime.fromisoformat(record["started"])
            elapsed = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
        return cls(attach_pass=max(1, int(record.get("passes") or 1)), elapsed_s=max(elapsed, 0.0),
                   address=record.get("ray_address"))

    def runner(self, host: RunHost) -> Runner:
        """The cluster the run was sent to, whatever this optseq would send new runs to."""
        from msgspec.structs import replace

        from optseq.state.runners.choose import configure, make
        from optseq.state.runners.ray_jobs import RayRunner

        current = host.runner
        if isinstance(current, RayRunner) and current.config.address == self.address:
            return current
        config = replace(configure(host.plan.runner), kind="ray", address=self.address)
        return make(config)


@dataclass
class Go:
    """How a run is carried out: where, who hears about it, who may stop it."""

    runner: Any
    on_event: EventSink | None
    on_log: LogSink
    control: Any
    """A lever_run.RunControl, typed Any because lever_run imports this module: what cancels the pass in flight."""
    arms: dict | None = None
    resume: Resume | None = None


@dataclass
class Collected:
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
    replicate: str = "pair"
    """What its sign test counts (ABPasses.replicate)."""
    budget: int | None = None
    """The unit budget its looks are spent over (ABPasses.budget)."""
    live_n: int = 0
    """Pairs the last live estimate was shown for."""
    elapsed_s: float | None = None
    """The run's length on the monotonic clock (a wall-clock jump during it changes nothing), set at its end."""
    loads: list = field(default_factory=list)
    """This machine's 1-minute load average at each local launch's start and end (load_now)."""
    paced: bool = False
    """An experiment's expected length was said (after its first block)."""
    leftovers: list = field(default_factory=list)
    """What the launches left running and optseq stopped after each: {"pid", "cmd", "launch", "pass"} each."""

    def pass_samples(self, pass_no: int) -> list:
        return [s for s in self.samples if s.get("run") == pass_no]


@dataclass
class Pass:
    """One pass's events as they come: samples tagged with their pass and kept on disk, live estimates."""

    host: RunHost
    lever: Lever
    run_id: int
    pass_no: int
    requested: int | None
    collected: "Collected"
    go: Go
    token: str | None = None
    """This launch's token (OPTSEQ_LAUNCH): a sample echoing another one was not measured by this launch."""
    metric_times: list = field(default_factory=list)
    """When each sample of the rule's metric arrived (monotonic): what a pair costs."""
    elapsed_s: float | None = None
    """The run's monotonic time when this pass was launched: kept on the run, for a re-attach's timeout."""
    launched_at: float = field(default_factory=time.monotonic)

    def event(self, ev: dict) -> None:
        kind, collected = ev.get("event"), self.collected
        if kind == "progress" and self.pass_no == 1 and not collected.paced:
            self._pace(ev)
        # the runner's outcome collects everything else, and is folded in once the pass ends
        if kind == "sample":
            ev = dict(ev, run=self.pass_no)
            if collected.book is not None and ev.get("metric") == collected.book.metric:
                self.metric_times.append(time.monotonic())
            collected.samples.append(ev)
            try:
                with open(collected.samples_file, "a", encoding="utf-8") as f:
                    f.write(json.dumps(ev) + "\n")
            except OSError as exc:  # named, for the one line the run ends with
                raise OSError(exc.errno, exc.strerror, str(collected.samples_file)) from None
        on_event = self.go.on_event
        if on_event:
            on_event(ev)
            if kind == "sample" and collected.book is not None and ev.get("metric") == collected.book.metric:
                estimate = _running_estimate(collected, self.lever.rule, self.pass_no, self.requested, self.token)
                if estimate:
                    on_event(estimate)

    def _pace(self, ev: dict) -> None:
        """An experiment's first block done: how long the run takes at that pace, said once before it goes on
        (a model-size experiment at GPU size runs for hours, and a decision by hand can end the wait)."""
        rule, done, total = self.lever.rule, ev.get("done"), ev.get("total")
        if self.lever.kind != "experiment" or rule is None or not self.requested or self.go.resume:
            return
        if isinstance(done, bool) or isinstance(total, bool) or not isinstance(done, (int, float)) \
                or not isinstance(total, (int, float)) or total <= 0:
            return
        if done * self.requested < total:  # the first of the pass's blocks is not done yet
            return
        self.collected.paced = True
        block = time.monotonic() - self.launched_at
        self.go.on_log(f"[optseq] the first block took {_length(block)}: {rule.repeats} blocks before it can decide "
                       f"≈ {_length(block * rule.repeats)}, up to {rule.max_repeats} ≈ "
                       f"{_length(block * rule.max_repeats)}; to choose without waiting, decide it by hand "
                       f"(optseq decide {self.lever.id} CONFIG --why …, or d in the console)")

    def started(self, fields: dict) -> None:
        # what finds the run again: a pid and process group here, a Ray submission id on a cluster
        from optseq.state.store.storage import StoreUnwritable

        extra = {"elapsed_at_pass": round(self.elapsed_s, 3)} if self.elapsed_s is not None else {}
        try:
            with self.host.lock, self.host.writing():
                self.host.update(self.run_id, {**fields, "passes": self.pass_no, **extra})
        except StoreUnwritable as exc:
            if getattr(self.go.runner, "name", "") != "local":
                raise  # a cluster's job is found again by what this writes: not started unrecorded
            # a full disk under the store: the pass goes on, for its log (the run's folder may well have room) is
            # what the run is finished from, by this optseq at its end or by the next one that can write; its group
            # dies with this optseq, so nothing is left running unrecorded
            self.go.on_log(f"[optseq] pass {self.pass_no}'s start cannot be recorded ({exc}); it goes on: its log "
                           "is the record")

    def pair_s(self) -> float | None:
        """Seconds a pair took in this launch, from the first sample of the metric to the last; None below two."""
        pairs = len(self.metric_times) // 2
        if pairs < 2:
            return None
        return (self.metric_times[-1] - self.metric_times[0]) / (pairs - 1)

    def fold(self, outcome: RunOutcome) -> RunOutcome:
        collected = self.collected
        collected.qualities.extend(outcome.qualities)
        collected.criteria.extend(outcome.criteria)
        collected.env.update(outcome.env)
        collected.warnings.extend(f"pass {self.pass_no}: {w}" for w in outcome.warnings)
        collected.leftovers.extend({**left, "pass": self.pass_no} for left in outcome.leftovers)
        return outcome


def experiment_length(lever, recent: Sequence[KeptRun]) -> str | None:
    """What an experiment is about to cost, said before its first block: the blocks its rule asks for and, where
    an earlier run of it here finished blocks at this bench size, the pace that run had (the first block of this
    one says it again from its own pace)."""
    rule = lever.rule
    if lever.kind != "experiment" or rule is None:
        return None
    head = f"[optseq] {rule.repeats} blocks before it can decide, up to {rule.max_repeats}"
    for run in reversed(recent):  # the run index's kept copies, typed as it kept them
        blocks, elapsed = (run.figures.best_of or {}).get("blocks"), run.elapsed_s
        if isinstance(blocks, int) and blocks > 0 and elapsed is not None:
            block = elapsed / blocks
            size = run.figures.bench_size
            at = f" at {size} size" if size is not None else ""
            head += (f"; run {run.id}{at} took {_length(block)} a block: ≈ {_length(block * rule.repeats)}, "
                     f"up to {_length(block * rule.max_repeats)}")
            break
    else:
        head += "; its length is said after the first block"
    return (f"{head} (within its timeout of {_length(lever.timeout_s)}); to choose without waiting, decide it by "
            f"hand (optseq decide {lever.id} CONFIG --why …, or d in the console)")


def _length(seconds: float) -> str:
    """`45 s`, `6 min 30 s`, `2 h 10 min`: a length to plan a wait by."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min" + (f" {seconds % 60} s" if seconds % 60 else "")
    return f"{seconds // 3600} h" + (f" {seconds % 3600 // 60} min" if seconds % 3600 // 60 else "")


def launch_token(tag: str, run_id: int, started: str, pass_no: int) -> str:
    """The token a pass's launch is given and the lever kit echoes in every sample: another pass's output,
    replayed, carries another token. Derived, not stored, so a re-attached run checks its passes read back."""
    return hashlib.sha256(f"{tag}:{run_id}:{started}:{pass_no}".encode()).hexdigest()[:16]


def launch(one: "Pass", run_dir: Path, infra, remaining_s: float) -> RunOutcome:
    lever, run_id, pass_no, go = one.lever, one.run_id, one.pass_no, one.go
    requested = one.requested
    env = {"OPTSEQ_RUN_ID": str(run_id), "OPTSEQ_INFRA": json.dumps(infra),
           "OPTSEQ_ARTIFACTS": str(run_dir / "artifacts"), "OPTSEQ_PASS": str(pass_no)}
    if one.token:
        env["OPTSEQ_LAUNCH"] = one.token
    if go.arms is not None:
        env["OPTSEQ_ARMS"] = json.dumps(go.arms)
    if requested:
        env["OPTSEQ_REPEATS"] = str(requested)
    spec = RunSpec(argv=list(lever.run), env=env, log_path=run_dir / f"pass-{pass_no}.log",
                          timeout_s=max(remaining_s, 0.001))
    attach = {"attach": True} if go.resume and pass_no == go.resume.attach_pass else {}
    launcher = go.runner.launch(spec, run_id=run_id, attempt=pass_no, resources=dict(lever.resources),
                                tag=one.host.store_tag, **attach)
    go.control.attach(launcher)
    local = getattr(go.runner, "name", "") == "local"  # a cluster's node is not this machine: its load says nothing
    if local:
        one.collected.loads.append(load_now())
    outcome = launcher.run(on_event=one.event, on_log=go.on_log, on_start=one.started)
    if local:
        one.collected.loads.append(load_now())
    return one.fold(outcome)


LOAD_ENV = "OPTSEQ_LOADAVG"
"""A number here is taken for the load average instead of the machine's (a test of the busy-machine warning)."""


def load_now() -> float | None:
    """This machine's 1-minute load average ($OPTSEQ_LOADAVG where set); None where the system gives none."""
    forced = os.environ.get(LOAD_ENV)
    if forced:
        try:
            return float(forced)
        except ValueError:
            pass
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def replay(run_dir: Path, pass_no: int, one: Pass) -> RunOutcome:
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


def _running_estimate(collected: Collected, rule, pass_no: int, requested, token=None) -> dict | None:
    """The estimate so far, with the same sequential bounds a look at this point would have, for live displays.

    Only a newly completed pair moves it; the pair accounting of the pass under way is previewed, not kept.
    """
    from optseq.state.runs.stats import summarise

    preview = collected.book.add_pass(pass_no, collected.pass_samples(pass_no), requested, commit=False,
                                      token=token)
    n = len(collected.book.pairs) + len(preview.fresh)
    if not preview.fresh or n == collected.live_n:
        return None
    collected.live_n = n
    ratios = collected.book.ratios(preview.fresh, preview.higher_is_better)
    estimate = {"event": "estimate", "estimate": statistics.median(ratios), "n": n, "metric": rule.metric,
                "ci_low": None, "ci_high": None}
    if n <= LIVE_BOUNDS_UP_TO or n % 25 == 0:
        # the pass under way counts as one more look, its launch as one more unit
        stats = summarise(collected.book, budget=collected.budget, threshold=rule.min_speedup, extra=preview.fresh,
                          replicate=collected.replicate, higher_is_better=preview.higher_is_better)
        estimate.update(estimate=stats.estimate, ci_low=stats.ci_low, ci_high=stats.ci_high,
                        launches=stats.launches if stats.replicate == "launch" else None)
    return estimate
