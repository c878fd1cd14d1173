"""Building the store bench's stores: N real-shaped lever runs on a plan, written through the real API."""
from __future__ import annotations

import inspect
import json
import os
import platform
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

GROUP = 100
POOL = 64
"""Drawn sample sets per kind of run (lever, wanted verdict, slow pair, repeated sample): a run of the same kind
as an earlier one `POOL` runs before reuses its samples and the pass loop's verdict on them (`_passes`), so a
100,000-run store builds in minutes; every record is still written through the real API."""
"""Runs per batch while building (one atomic store write per group instead of several per run)."""
LEVERS = ("cython_bot", "option_b", "option_a")
"""The levers the built history runs, in turn: the default plan's A/B levers that can be adopted or rejected
once the Julia gate is NO-GO and Option B's plan is written."""

# What a bench reports about itself (the `env` event of `python -m optseq.engine.bench`): the same on every run,
# so no run makes another stale by a device or torch change (as on one machine with one stack).
ENV = {"python": platform.python_version(), "torch": "2.13.0+cpu", "device": "cpu", "cpu": "store-bench CPU",
       "threads": 2, "code_hash": "5be1c0ffee5eed00", "bot_backend": "cython"}
BASELINES = {"cython_bot": (41_000.0, "calls/s"), "option_b": (860.0, "samples/s"),
             "option_a": (860.0, "samples/s")}
"""Baseline arm's throughput and unit per lever; the candidate is that times the drawn ratio."""


class BenchError(RuntimeError):
    """A command under test failed, or the document cannot take the section; str() is one line."""


@dataclass
class Built:
    runs: int
    seconds: float
    decisions: int = 0
    events: dict[str, int] = field(default_factory=dict)
    """Event records by type (stale, superseded, decision_point, plan)."""
    verdicts: dict[str, int] = field(default_factory=dict)


def build_store(plan_path: Path | str, db: Path | str, runs: int, *, group: int = GROUP, seed: int = 9,
                exact: bool = False, progress: Callable[[int, int], None] | None = None,
                more: bool = False) -> Built:
    """Build a store of `runs` finished lever runs through the real API, as `lever_run.run_lever` writes them.

    Before the runs: `record julia_port torch_jl c4 fail` (the gate goes NO-GO automatically) and
    `plan option_b docs/plans/option_b.md`, so Option B and then Option A can run. Run k goes to the
    first runnable lever of LEVERS from k mod 3 on; each lever's runs alternate adopt and reject, and
    every tenth run overall straddles its threshold up to the rule's budget and stays inconclusive (a
    re-measure that takes a lever out of the stack, as real histories have). Two in three of a lever's runs
    need a second pass (one slow pair in the first), every fifth run repeats a sample (a pair-accounting
    warning): about 10 ratios and 20 sample lines a run.
    Per run, as `run_lever` does: a `runs` record appended as running, one update per pass as its
    command starts, samples appended to `runs/ID/samples.jsonl`, a log per pass, then the final update
    with status, summary (stats with every per-pair ratio, verdict, rule), fingerprint, env, warnings
    and pass_counts; the machine moved by `run_ended`; the automatic decision with its stats, and the
    derived events the decisions cause (stale, superseded), kept by the Sequencer as a real run's are.

    Batching is for building only: the runs of each group of `group` share one `seq.writer.writing()` (one
    store.batch(), one levers snapshot), where a real run writes each step as its own transaction.
    Also for building only, unless `exact`: the machine's `run_ended` with the final record in hand stands
    for a `Writer.run_ended` that reads every run to find that record again (one that takes the record
    is called as it is), and `mark_stack_changes` (which reads every run too) is left out, as it writes
    nothing while the fingerprint stays the same. On the store this was written for, each of those reads
    copies the whole runs table, which makes a 10,000-run build take hours; `exact=True` makes the very
    calls `runs.run_record.finish` makes, and the tests hold that both give the same records.
    Every store call is in this function, so a changed store API is adapted here and nowhere else.
    `more`: `runs` more runs on a store this built before (the sync bench's one new run), without the gate and
    the plan again, numbered on from the runs it holds.
    """
    from optseq.state.plan.definition import definition
    from optseq.state.runs.measured_on import fingerprint
    from optseq.state.runs.run_record import rests_on
    from optseq.state.errors import InputError
    from optseq.state.sequencer import Sequencer
    from optseq.state.store.records import utc_now

    passes_of: dict[tuple, list] = {}
    started_at = time.perf_counter()
    per_lever: dict[str, int] = {}
    built = Built(runs=0, seconds=0.0)
    with Sequencer.open(plan_path, db, mode="write") as seq:
        takes_record = "record" in inspect.signature(seq.writer.run_ended).parameters
        start = len(seq.store.all("runs")) if more else 0
        if not more:
            seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail",
                                         evidence="store bench: Torch.jl c4 fails")
            seq.actions.write_plan("option_b", "docs/plans/option_b.md")
        for first in range(start, start + runs, group):
            with seq.writer.writing():  # building only: one batch per group (see the docstring)
                for k in range(first, min(first + group, start + runs)):
                    lever_id = None
                    for i in range(len(LEVERS)):
                        candidate = LEVERS[(k + i) % len(LEVERS)]
                        try:
                            seq.lever_runs.check_runnable(candidate)
                        except InputError:
                            continue
                        lever_id = candidate
                        break
                    if lever_id is None:
                        raise BenchError(f"run {k + 1}: none of {', '.join(LEVERS)} can run on this plan")
                    lever = seq.held.lever(lever_id)
                    rule = lever.rule
                    if rule is None:  # the bench's plan gives each of its levers a rule
                        raise BenchError(f"{lever_id}: the plan gives it no [levers.rule] to run by")
                    j = per_lever.get(lever_id, 0)  # the lever's decided runs so far
                    want = "inconclusive" if k % 10 == 9 else ("adopt" if j % 2 == 0 else "reject")
                    per_lever[lever_id] = j + (want != "inconclusive")

                    # -- run_lever's first write: the run, running, on the stack without this lever
                    infra = seq.machine.infra()
                    infra["adopted"] = [x for x in infra["adopted"] if x != lever_id]
                    with seq.writer.writing():
                        record = seq.writer.append("runs", {"lever": lever_id, "status": "running", "argv": list(lever.run),
                                                     "pid": os.getpid(), "started": utc_now(), "infra": infra,
                                                     "passes": 0, "runner": "local", "testbed": seq.lever_runs.testbed})
                    run_id = record["id"]
                    run_dir = seq.store.run_dir(run_id)
                    samples_file = run_dir / "samples.jsonl"

                    # -- the passes: each launch updates the run, its samples go to the file as they come
                    pattern = (lever_id, want, j % 3 != 0, k % 5 == 4, k % POOL)
                    if pattern not in passes_of:
                        passes_of[pattern] = _passes(rule, lever, pattern, seed)
                    all_samples: list[dict] = []
                    warnings: list[str] = []
                    pass_counts: list[dict] = []
                    log_path = None
                    for pass_no, (samples, quality, step) in enumerate(passes_of[pattern], 1):
                        with seq.writer.writing():
                            child = 20_000 + (run_id * 7 + pass_no) % 40_000
                            seq.store.update("runs", run_id, {"child_pid": child, "pgid": child, "passes": pass_no,
                                                              "elapsed_at_pass": 1.5 * (pass_no - 1)})
                        with open(samples_file, "a", encoding="utf-8") as f:
                            for s in samples:
                                f.write(json.dumps(s) + "\n")
                        log_path = run_dir / f"pass-{pass_no}.log"
                        log_path.write_text(_log(lever_id, run_id, pass_no, len(samples) // 2, samples, quality),
                                            encoding="utf-8")
                        all_samples += samples
                        pass_counts.append(step.counts)
                        warnings += step.warnings
                    if step.failure:
                        raise BenchError(f"run {run_id} ({lever_id}): {step.failure}")

                    # -- run_record.finish: the final record, the machine's move, the automatic decision
                    verdict = step.verdict
                    rule_text = f"{rule.metric} sequential bound vs {rule.min_speedup:g}×"  # run_record's _rule_text
                    summary = {"stats": step.stats.to_dict(), "verdict": verdict.to_dict(), "rule": rule_text}
                    rests_on(summary["stats"], verdict.outcome)
                    if step.split is not None:
                        summary["split"] = step.split.to_dict()
                    fields = {
                        "status": "succeeded", "ended": utc_now(), "elapsed_s": 1.5 * len(passes_of[pattern]),
                        "exit_code": 0,
                        "detail": "exited 0 after done",
                        "passes": len(passes_of[pattern]), "env": dict(ENV),
                        # run_record's: the lever as it ran, and no repository (the built store has none)
                        "fingerprint": {**fingerprint(ENV, seq.machine.infra()),
                                        "definition": definition(lever, seq.plan.path), "repo": None},
                        "samples_file": str(samples_file), "n_samples": len(all_samples), "log": str(log_path),
                        "warnings": warnings[:40], "pass_counts": pass_counts, "summary": summary,
                        "verdict": verdict.outcome, "testbed": seq.lever_runs.testbed,
                    }
                    with seq.writer.writing():
                        seq.store.update("runs", run_id, fields)
                        if takes_record:  # a run_ended that is handed the final record reads nothing
                            seq.writer.run_ended(lever_id, "succeeded", verdict.outcome, dict(record, **fields))
                        elif exact:
                            seq.writer.run_ended(lever_id, "succeeded", verdict.outcome)
                        else:  # Writer.run_ended without its look-up of the record we hold
                            for event in seq.machine.run_ended(lever_id, "succeeded", verdict.outcome,
                                                               dict(record, **fields)):
                                seq.store.append("events", event)
                        seq.writer.fire_points("runs", {"lever": lever_id, "status": "succeeded"})
                        if verdict.outcome in ("adopt", "reject"):
                            seq.actions.decide_in_batch(lever_id, verdict.outcome, why=verdict.reason, auto=True,
                                                rule=rule_text, runs=(run_id,), stats=summary["stats"], config=None,
                                                why_said=summary["verdict"].get("said"))
                        if exact:  # the fingerprint never changes here, so this writes nothing
                            seq.actions.mark_stack_changes(run_id, fields["fingerprint"], fields["testbed"])
                    built.verdicts[verdict.outcome] = built.verdicts.get(verdict.outcome, 0) + 1
                    built.runs += 1
            if progress:
                progress(built.runs, runs)
        built.decisions = len(seq.store.all("decisions"))
        for event in seq.store.all("events"):
            kind = str(event.get("type"))
            built.events[kind] = built.events.get(kind, 0) + 1
    built.seconds = time.perf_counter() - started_at
    return built


def _passes(rule, lever, pattern: tuple, seed: int) -> list[tuple[list[dict], dict, object]]:
    """One kind of run's passes as the real pass loop judges them: (samples, quality, step) per pass, the samples
    drawn from a generator seeded by the kind, so the same kind always gets the same ones."""
    from optseq.state.runs.passes import ABPasses

    lever_id, want, slow_pair, repeated, _ = pattern
    rng = random.Random(f"{seed}:{pattern!r}")
    passes = ABPasses(rule)
    qualities: list[dict] = []
    out: list[tuple[list[dict], dict, object]] = []
    pass_no = 0
    while True:
        pass_no += 1
        samples = _draw_pass(rule, lever_id, want, pass_no, passes.requested, rng, slow_pair=slow_pair,
                             repeated=repeated)
        quality = {"name": rule.guards[0].name, "value": 0.0, "limit": float(rule.guards[0].max or 0)}
        qualities.append(quality)
        step = passes.after_pass(samples, qualities, elapsed_s=1.5 * pass_no, timeout_s=lever.timeout_s,
                                 duration_s=1.5, pair_s=0.1)
        out.append((samples, quality, step))
        if step.failure or not step.more:
            return out


def _draw_pass(rule, lever_id: str, want: str, pass_no: int, requested: int, rng: random.Random, *,
               slow_pair: bool, repeated: bool) -> list[dict]:
    """One pass's `sample` events as a bench would send them (tagged with the pass, as lever_run keeps them)."""
    base, unit = BASELINES[lever_id]
    threshold = rule.min_speedup
    ratio = {"adopt": threshold * 1.6, "reject": 0.98}.get(want, threshold)
    samples = []
    for i in range(requested):
        r = ratio
        if want == "inconclusive":
            r = threshold * (1 + (0.02 if pass_no % 2 else -0.02))  # launches either side: no bound can clear it
        elif pass_no == 1 and i == 2 and slow_pair:
            r = ratio * (0.5 if want == "adopt" else 2.0)  # one pair on the wrong side: a second pass
        pair = [{"event": "sample", "arm": arm, "metric": rule.metric, "value": value * (1 + rng.gauss(0.0, 0.005)),
                 "unit": unit, "higher_is_better": True, "pair": i, "run": pass_no}
                for arm, value in (("baseline", base), ("candidate", base * r))]
        # in kit.pairs' order, A B B A and the other way round every other launch, each saying which ran first: a
        # bench whose baseline came first in every pair is not decided
        for position, sample in enumerate(pair if (i + pass_no % 2) % 2 == 1 else pair[::-1]):
            samples.append(dict(sample, first=position == 0))
    if pass_no == 1 and repeated:
        samples.append(dict(samples[0], value=samples[0]["value"] * 1.01))  # a repeated pair: warned, not counted
    return samples


def _log(lever_id: str, run_id: int, pass_no: int, requested: int, samples: list[dict], quality: dict) -> str:
    """A pass's log: every line the bench printed (protocol events included), as the runner keeps it."""
    lines = [f"{lever_id} bench starting: run {run_id}, pass {pass_no}, {requested} pairs",
             json.dumps({"event": "env", **ENV})]
    for n, s in enumerate(samples):
        lines.append(json.dumps({k: v for k, v in s.items() if k != "run"}))
        if n % 2:
            lines.append(json.dumps({"event": "progress", "done": n // 2 + 1, "total": requested,
                                     "msg": f"pair {n // 2 + 1}"}))
    lines += [json.dumps({"event": "quality", **quality}), json.dumps({"event": "done"})]
    return "\n".join(lines) + "\n"
