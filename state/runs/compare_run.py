"""`optseq compare BASE [HEAD]`: the plan's workload (or a command-pair lever's candidate arm) measured at two commits
as the two arms, by the same pass loop, pair accounting and sequential test as a lever run, against a tolerance.

It is recorded as a run of no lever (`kind = "compare"`), so `optseq runs` and the console list it, and it moves
no lever. Both arms run the same command on the current stack (the adopted levers' flags and environment), each in
a worktree of its commit, after the workload's `setup` there.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

from optseq.state.code import branch
from optseq.state.errors import InputError
from optseq.state.plan.arms import guard_rules
from optseq.state.plan.model import Lever, Rule
from optseq.state.record_types import Summary, figures_of
from optseq.state.plan.testbed import of as testbed_of
from optseq.state.plan.workload import ARMS_RUN, Arms, apply_args
from optseq.state.runners import leftovers
from optseq.state.runs import commit_gate
from optseq.state.runs.lever_run import RunControl, measure, unmade_outcome
from optseq.state.runners.interface import RunOutcome
from optseq.state.runs.host import Record, RunHost, Runner
from optseq.state.runs.measured_on import fingerprint, measured_on_testbed, stack
from optseq.state.runs.run_end import Ending, finish_run
from optseq.state.runs.run_pass import Collected, Go
from optseq.state.store.records import utc_now

COMPARE_ID = "compare"
"""The name a compare's pseudo-lever goes by in its progress lines; no lever may be a run keyword, nor this."""
DEFAULT_TIMEOUT_S = 3600.0


@dataclass
class Gate:
    """What a compare measures and holds HEAD to."""

    arms: Arms
    """The one command both commits run (its candidate_args already in it)."""
    target: str
    """`workload`, or the lever whose candidate arm is measured."""
    tolerance: float
    rule: Rule
    timeout_s: float


@dataclass
class CompareReport:
    run_id: int
    status: str
    """How the run ended: succeeded, failed, timeout, cancelled, interrupted, unavailable."""
    verdict: str
    """not slower | slower | inconclusive | guard | failed."""
    message: str
    """`fast (41b7152) is not slower than main (974f1b9)`."""
    reason: str
    """The rule's figures and why they decide (or how the run failed)."""
    code: dict
    tolerance: float
    summary: dict = field(default_factory=dict)
    reproduce: str = ""
    pairs: list = field(default_factory=list)
    """Every counted pair of launches: pass, pair, base, head, ratio (HEAD's speed over BASE's), first."""
    cost: dict = field(default_factory=dict)
    """What it took: wall seconds, pairs counted and arm runs launched (arm_runs), from the run's records."""

    @property
    def exit_code(self) -> int:
        return commit_gate.EXIT.get(self.verdict, commit_gate.EXIT["failed"])

    @property
    def figures(self) -> Summary:
        """The summary as the compare's end stored it, as its readers read a stored one."""
        return figures_of(self.summary)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "status": self.status, "verdict": self.verdict, "exit_code": self.exit_code,
                "message": self.message, "reason": self.reason, "tolerance": self.tolerance, "base": self.code.get("baseline"),
                "head": self.code.get("candidate"), "summary": self.summary, "reproduce": self.reproduce,
                "pairs": self.pairs, "cost": self.cost}


def gate(host: RunHost, lever_id: str | None, tolerance: float | None) -> Gate:
    """The command and rule a compare runs: InputError for a plan with nothing to compare."""
    settings = host.plan.compare
    tol = tolerance if tolerance is not None else settings.tolerance or commit_gate.DEFAULT_TOLERANCE
    if lever_id is not None:
        lever = host.lever(lever_id)
        if lever.arms is None:
            raise InputError(f"compare --lever {lever_id}: a protocol bench (it measures its own two arms); compare "
                             "runs one command at two commits: a command-pair lever's, or the plan's [workload]")
        arms, target = lever.arms, lever_id
        if arms.whole:
            raise InputError(f"compare --lever {lever_id}: its arms are two whole commands; compare runs one command "
                             "at two commits (write the lever as a change to one command)")
        command, env = apply_args(arms.baseline, arms.candidate_args), arms.candidate_env
    else:
        workload = host.plan.workload
        if workload is None:
            raise InputError(f"{host.plan.path}: no [workload] to compare (give --lever ID, a command-pair lever, or "
                             "declare the workload its levers change)")
        if workload.source is None or workload.metric is None:
            raise InputError(f"{host.plan.path}: workload.metric: missing (compare reads HEAD's and BASE's number "
                             "from it)")
        arms = Arms(baseline=workload.command, candidate=workload.command, metric=workload.metric,
                    source=workload.source, unit=workload.unit, higher_is_better=bool(workload.higher_is_better),
                    cwd=workload.cwd, warmup=workload.warmup if workload.warmup is not None else 1,
                    order=workload.order or "alternate", guards=workload.guards, workload_env=workload.env,
                    setup=workload.setup)
        command, env, target = workload.command, (), "workload"
    one = Arms(baseline=command, candidate=command, metric=arms.metric, source=arms.source, unit=arms.unit,
               higher_is_better=arms.higher_is_better, baseline_env=env, candidate_env=env, cwd=arms.cwd,
               warmup=arms.warmup, order=arms.order, guards=arms.guards, workload_env=arms.workload_env,
               setup=arms.setup or (host.plan.workload.setup if host.plan.workload else ()))
    rule = commit_gate.rule(one.metric, tol, settings.repeats or commit_gate.DEFAULT_REPEATS,
                            settings.max_repeats or commit_gate.DEFAULT_MAX_REPEATS, guard_rules(one.guards))
    return Gate(one, target, tol, rule, settings.timeout_s or DEFAULT_TIMEOUT_S)


def prepare(host: RunHost, base_ref: str, head_ref: str = "HEAD", lever_id: str | None = None,
            tolerance: float | None = None) -> tuple[Gate, branch.Commits]:
    """What a compare measures, and both refs as commits now; InputError, before anything runs or is recorded,
    for a plan with nothing to compare, a plan outside git, a ref that names nothing, two refs naming one commit,
    a read-only store."""
    found = gate(host, lever_id, tolerance)
    host.testbed  # noqa: B018 -- an OPTSEQ_TESTBED that names no testbed: refused before anything runs
    host.check_writable("a compare is recorded in it")
    commits = branch.resolve(found.arms.cwd, base_ref, head_ref, "compare", names=("BASE", "HEAD"))
    if commits.baseline.commit == commits.candidate.commit:
        raise InputError(f"compare: HEAD {commits.candidate.text()} is the same commit as BASE "
                         f"{commits.baseline.text()}: there is nothing to compare (compare measures two commits: "
                         f"give BASE and HEAD that differ)")
    return found, commits


def notices(commits: branch.Commits) -> list[str]:
    """What the user may think is measured and is not, said before the run: the working tree's uncommitted changes
    where one side is the commit it has checked out (the worktrees hold commits, never the user's edits)."""
    from optseq.state.code import git as g

    try:
        checked_out = g.resolve(commits.repo, "HEAD")
        if checked_out not in (commits.baseline.commit, commits.candidate.commit):
            return []
        changed = len(g.changed_files(commits.repo))
    except g.GitError:
        return []
    if not changed:
        return []
    return [f"compare: uncommitted changes in {changed} file{'s' * (changed != 1)} are not measured: compare "
            f"measures commits"]


def compare(host: RunHost, found: Gate, commits: branch.Commits, *, lever_id: str | None = None, on_event=None,
            on_log=None, control: RunControl | None = None, plan=None) -> CompareReport:
    """Blocking: check both commits out, measure, record (`prepare` gives `found` and `commits`; `plan`, the
    --plan it was given, for the command that reproduces it)."""
    from optseq.state.runners.interface import RunnerError

    try:
        runner = host.runner
    except RunnerError as exc:
        raise InputError(str(exc)) from None
    go = Go(runner=runner, on_event=on_event, on_log=on_log or (lambda line: None), control=control or RunControl())
    with contextlib.ExitStack() as hold:  # both worktrees held until the compare ends
        try:
            trees, unmade = branch.trees(commits, found.arms.setup, hold), None
        except InputError as exc:  # both refs named commits: a checkout git fails to make fails the compare
            trees, unmade = None, str(exc)
        return _compare(host, found, commits, trees, runner, lever_id, go, plan, unmade)


def _compare(host: RunHost, found: Gate, commits: branch.Commits, trees: dict | None, runner: Runner,
             lever_id: str | None, go: Go, plan: object, unmade: str | None = None) -> CompareReport:
    import shlex

    on_stack = stack(host.plan, host.machine, lever_id or "")
    spec = {**found.arms.to_dict(on_stack), **({"trees": trees} if trees is not None else {})}
    reproduce = "optseq " + shlex.join((["--plan", str(plan)] if plan is not None else [])
                                       + ["compare", commits.baseline.ref, commits.candidate.ref]
                                       + (["--lever", lever_id] if lever_id else [])
                                       + ["--tolerance", commit_gate.tolerance_text(found.tolerance)])
    about = {"base": commits.to_dict()["baseline"], "head": commits.to_dict()["candidate"], "target": found.target,
             "tolerance": found.tolerance, "threshold": found.rule.min_speedup, "reproduce": reproduce}
    with host.lock:
        with host.writing():
            infra = host.machine.infra()
            record = host.append_run({"kind": "compare", "status": "running", "argv": list(ARMS_RUN),
                                     "pid": os.getpid(), "started": utc_now(), "infra": infra, "passes": 0,
                                     "runner": runner.name, "arms": spec, "code": commits.to_dict(),
                                     "compare": about, "testbed": host.testbed})
            run_dir = host.run_dir(record["id"])
    lever = Lever(id=COMPARE_ID, title="compare", kind="speedup", index=-1, run=ARMS_RUN, timeout_s=found.timeout_s,
                  rule=found.rule, arms=found.arms)
    go.arms = spec
    if unmade is not None:  # recorded, then failed with the cause as its line: nothing was launched
        tally = Collected(samples_file=run_dir / "samples.jsonl", elapsed_s=0.0)
        return _finish(host, record["id"], found, commits, unmade_outcome(unmade, go.control), tally, 0, None,
                       reproduce)
    outcome, tally, passes, step, started = measure(host, lever, record["id"], run_dir, infra, go)
    tally.elapsed_s = time.monotonic() - started
    return _finish(host, record["id"], found, commits, outcome, tally, passes, step, reproduce)


def _finish(host: RunHost, run_id: int, found: Gate, commits: branch.Commits, outcome: RunOutcome,
            tally: Collected, passes: int, step: Any, reproduce: str) -> CompareReport:
    failure = step.failure if step else None
    status = "failed" if failure else outcome.status
    detail = failure or outcome.detail
    summary: dict = {}
    verdict = "failed"
    if status == "succeeded" and step is not None and step.stats is not None and not step.error:
        rule_verdict = step.verdict
        guard_failed = any(g.get("ok") is False for g in rule_verdict.guards)
        verdict = commit_gate.verdict_of(rule_verdict.outcome, guard_failed)
        summary = {"stats": step.stats.to_dict(), "verdict": rule_verdict.to_dict(), "gate": verdict,
                   "rule": f"{found.rule.metric} sequential bound vs {found.rule.min_speedup:.4g}× "
                           f"(tolerance {commit_gate.tolerance_text(found.tolerance)})"}
        detail = rule_verdict.reason
    elif status == "succeeded":
        detail = step.error if step is not None and step.error else detail
        summary = {"error": detail}
    with host.lock:
        stored = host.record(run_id)
        fields: Record = {
            "elapsed_s": tally.elapsed_s, "exit_code": outcome.exit_code, "detail": detail, "passes": passes,
            "env": {k: v for k, v in tally.env.items() if k != "testbed"}, "summary": summary,
            "fingerprint": {**fingerprint(tally.env, host.machine.infra()), "code": commits.to_dict(), "repo": None},
            "samples_file": str(tally.samples_file) if tally.samples else None, "n_samples": len(tally.samples),
            "log": outcome.log_path, "warnings": tally.warnings[:40], "pass_counts": tally.passes,
            "testbed": measured_on_testbed(tally.env, testbed_of(stored), host.testbed, stored.get("runner"))}
        if tally.leftovers:  # what outlived its launch, stopped (run_record.finish keeps it on a lever's run too)
            fields["leftovers"] = tally.leftovers[:leftovers.KEPT]
            fields["notes"] = [leftovers.run_line(tally.leftovers)]
        if status in ("failed", "timeout"):
            fields["log_tail"] = outcome.log_tail
        # a run of no lever: it moves none, and decides nothing
        finish_run(host, Ending(run_id, status, verdict, fields, marks_stack=False))
    base, head = commits.baseline.text(), commits.candidate.text()
    said = {"slower": "slower than", "not slower": "not slower than", "inconclusive": "not told apart from",
            "guard": "outside a guard against", "failed": "not measured against"}[verdict]
    return CompareReport(run_id=run_id, status=status, verdict=verdict, message=f"{head} is {said} {base}",
                         reason=detail,
                         code=commits.to_dict(), tolerance=found.tolerance, summary=summary, reproduce=reproduce,
                         pairs=_pairs(tally.book), cost=_cost(found, tally))


def _cost(found: Gate, tally) -> dict:
    """Wall seconds, pairs counted, and arm runs launched: every sample of the metric is one arm run, and each
    pass that brought any ran `warmup` untimed runs of each arm before them (160 pairs in 5 passes: 330)."""
    measured = [s for s in tally.samples if s.get("metric") == found.rule.metric]
    passes = {s.get("run") for s in measured}
    return {"wall_s": round(tally.elapsed_s or 0.0, 3), "pairs": len(tally.book.pairs) if tally.book else 0,
            "arm_runs": len(measured) + 2 * found.arms.warmup * len(passes), "passes": len(passes)}


def length_line(host: RunHost, found: Gate) -> str:
    """What the compare may cost, said before it starts, as a watch says it: the last compare here of the same
    target, at its pace, and at the whole pair budget, against the timeout."""
    from optseq.state.runs.run_pass import _length

    budget = found.rule.max_repeats
    compares = (c.run for c in reversed(host.machine.runs.compares))  # the run index's kept copies, typed
    last = next((c for c in compares if c.status == "succeeded" and c.elapsed_s is not None
                 and (c.compare or {}).get("target") == found.target), None)
    pairs = last.stats.n if last is not None else None
    tail = f"(timeout {_length(found.timeout_s)})"
    if last is None or last.elapsed_s is None or pairs is None or pairs <= 0:
        return (f"compare: no compare of {_target(found)} here yet, no length to go by: {found.rule.repeats} pairs "
                f"first, up to {budget} ({2 * budget} arm runs) {tail}")
    most = last.elapsed_s * max(1.0, budget / pairs)
    return (f"compare: the last compare here (run {last.id}) took {_length(last.elapsed_s)} for {pairs} "
            f"pairs; up to {_length(most)} if this one needs all {budget} {tail}")


def _target(found: Gate) -> str:
    return "the workload" if found.target == "workload" else found.target


def _pairs(book) -> list[dict]:
    if book is None:
        return []
    first = {True: "BASE", False: "HEAD", None: None}
    return [{"pass": p.run, "pair": p.pair, "base": p.baseline, "head": p.candidate, "ratio": r,
             "first": first[p.baseline_first]} for p, r in zip(book.pairs, book.ratios())]
