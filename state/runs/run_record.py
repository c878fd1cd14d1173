"""Finishing a lever run: the record's last fields, the verdict or choice it came to, and the decision it makes."""
from __future__ import annotations

import os
from typing import Any

from optseq.state.kinds import WatchVerdict
from optseq.state.said import say, text
from optseq.state.plan.definition import definition
from optseq.state.plan.model import Lever
from optseq.state.record_types import Run, as_
from optseq.state.plan.testbed import decides, foreign_note, of as testbed_of
from optseq.state.runners import leftovers
from optseq.state.runners.interface import RunOutcome
from optseq.state.runs.host import RunHost
from optseq.state.runs.measured_on import config_of, fingerprint, measured_on_testbed
from optseq.state.runs.run_pass import Collected
from optseq.state.runs.run_end import Decision, Ending, Move, finish_run
from optseq.state.runs.words import WORDS as RUN_WORDS

MAX_STORED_WARNINGS = 40
"""Warnings kept on the run record; the log file has every line."""


def finish(host: RunHost, lever: Lever, run_id: int, outcome: RunOutcome, collected: Collected, passes: int,
           step: Any) -> dict:
    """Record how the run ended, with its verdict and decision; returns the fields of its RunReport."""
    failure = step.failure if step else None
    # a command that exits cleanly but brings no countable pair has failed as a lever run
    status = "failed" if failure else outcome.status
    detail = failure or outcome.detail
    warnings = collected.warnings[:MAX_STORED_WARNINGS]
    if len(collected.warnings) > MAX_STORED_WARNINGS:
        warnings.append(f"... and {len(collected.warnings) - MAX_STORED_WARNINGS} more (see the log)")
    stored = host.record(run_id)
    started = as_(Run, stored)  # the run's record as its start wrote it
    code, watch = started.code, bool(started.watch)
    fields: dict[str, Any] = {
        "elapsed_s": collected.elapsed_s, "exit_code": outcome.exit_code, "detail": detail,
        "passes": passes, "env": {k: v for k, v in collected.env.items() if k != "testbed"},
        # the lever as this run ran it: an edit of the plan afterwards makes its numbers stale, naming the part
        # a branch lever's code is its two commits (`code`), not the working tree's state
        "fingerprint": {**fingerprint(collected.env, host.machine.infra()),
                        "definition": definition(lever, host.plan.path),
                        **({"code": code, "repo": None} if code else {"repo": _repo(lever, host.plan.path)})},
        "samples_file": str(collected.samples_file) if collected.samples else None,
        "n_samples": len(collected.samples), "log": outcome.log_path, "warnings": warnings,
        "pass_counts": collected.passes,
        # the machine it measured on: the start's (a re-attached run's too), or on a cluster the node's (its job
        # says it), in the final record as well, for a process that catches up on the update alone
        "testbed": measured_on_testbed(collected.env, testbed_of(stored), host.testbed, started.runner),
    }
    if collected.leftovers:  # what outlived its launch, stopped: on the record, in full up to a bound
        fields["leftovers"] = collected.leftovers[:leftovers.KEPT]
    if status in ("failed", "timeout"):
        fields["log_tail"] = outcome.log_tail
    if status == "unavailable":
        fields["reason"] = outcome.unavailable_reason
    summary: dict[str, Any] = {}
    decision: str | None = None
    verdict_name: str | None = None
    why_said: dict | None = None
    why = detail
    message = f"{lever.id}: {detail}"
    rule = lever.rule
    try:
        if status == "succeeded" and step is not None and step.error:
            raise ValueError(step.error)
        if status == "succeeded" and rule is not None and lever.kind == "experiment":
            summary, decision, why = _experiment(collected, rule, step.result)
            why_said = step.result.said  # the reason in the doc's language, on the decision it makes
            verdict_name = decision or "inconclusive"
            message = f"{lever.id}: {step.result.outcome.replace('_', ' ')} — {why}"
        elif status == "succeeded" and rule is not None and lever.kind != "decision":
            stats, verdict = step.stats, step.verdict
            summary = {"stats": stats.to_dict(), "verdict": verdict.to_dict(), "rule": _rule_text(rule)}
            if step.split is not None:
                summary["split"] = step.split.to_dict()
            verdict_name = WatchVerdict.of(verdict.outcome) if watch else verdict.outcome
            # a watch checks the standing adopt: it says whether the gain holds, and decides nothing
            decision = verdict.outcome if verdict.outcome in ("adopt", "reject") and not watch else None
            message = f"{lever.id}: {verdict_name} — {verdict.reason}"
            why, why_said = verdict.reason, (summary["verdict"] or {}).get("said")
    except ValueError as exc:  # samples the statistics refuse (StatsError): the run stands, undecided
        summary = {"error": str(exc)}
        verdict_name = "inconclusive"
        message = f"{lever.id}: measured, but the samples could not be judged: {exc}"
    said = noise_said(collected.loads, summary.get("stats"), rule) if status == "succeeded" else None
    if said:
        # on the run's warnings, and where the views read it: the stats (an A/B run's), else the summary; its
        # said beside it, for the export's language
        noise = text(said, "en", RUN_WORDS)
        warnings.append(noise)
        where = summary["stats"] if isinstance(summary.get("stats"), dict) else summary
        where["noise"], where["noise_said"] = noise, said
    if isinstance(summary.get("stats"), dict):
        rests_on(summary["stats"], verdict_name)
    if isinstance(collected.env.get("bench_size"), str) and summary and "error" not in summary:
        # with the figures themselves, so every view that shows them (decisions carry the stats) can say so
        where = summary["stats"] if isinstance(summary.get("stats"), dict) else summary
        where["bench_size"] = collected.env["bench_size"]
    fields["summary"] = summary
    if watch:
        fields["watch"] = True  # in the final record too: a process catching up reads the update alone
    # recorded and shown, but another testbed's numbers decide this plan
    foreign = None if decides(fields, host.plan.testbed) else foreign_note(fields, host.plan.testbed)
    criteria = () if foreign else tuple((lever.id, crit) for crit in collected.criteria)
    decisions = () if foreign or not decision else (
        Decision(lever.id, decision, why=why, rule=_rule_text(rule), runs=(run_id,), stats=summary.get("stats"),
                 config=summary.get("config"), why_said=why_said),)
    end = finish_run(host, Ending(
        run_id, status, verdict_name, fields, moves=(Move(lever.id, verdict_name),), criteria=criteria,
        decisions=decisions, said=(foreign,) if foreign else (),
        # each launch's line said it as it ended: the record's note, not the message
        kept=(leftovers.run_line(collected.leftovers),) if collected.leftovers else ()))
    if end.said:
        message += " (" + "; ".join(end.said) + ")"
    return dict(run_id=run_id, lever=lever.id, status=status, message=message, summary=summary,
                decision=end.decided.get(lever.id), verdict=verdict_name)


def noise_line(loads, stats: dict | None, rule) -> str | None:
    """One line when the run's figures may be blurred, else None: this machine's load average above its cores
    at a launch's start or end (another job was competing for it), or a baseline whose spread within a launch (or,
    where each arm run is its own process, from pair to pair: stats' baseline_spread, an IQR over the median) is wider than the min_speedup − 1 the rule must resolve."""
    said = noise_said(loads, stats, rule)
    return text(said, "en", RUN_WORDS) if said else None


def noise_said(loads, stats: dict | None, rule) -> dict | None:
    """noise_line as a said of runs/words.py, for the export to say in its language."""
    parts = []
    readings = [x for x in loads or () if isinstance(x, (int, float))]
    cores = os.cpu_count() or 1
    if readings and max(readings) > cores:
        parts.append(say("noisy_load", load=f"{max(readings):.1f}", cores=cores, s="s" * (cores != 1)))
    spread = (stats or {}).get("baseline_spread")
    floor = getattr(rule, "min_speedup", None)
    if (isinstance(spread, (int, float)) and isinstance(floor, (int, float)) and not getattr(rule, "choose", None)
            and floor > 1 and spread > floor - 1):
        # a command-pair lever counts pairs, each arm run its own process: no launch holds several of them
        where = say("within_launch" if (stats or {}).get("replicate") == "launch" else "pair_to_pair")
        parts.append(say("noisy_spread", where=where, spread=f"{spread:.0%}", floor=f"{floor - 1:.0%}",
                         min_speedup=f"{floor:g}"))
    return say("noisy", reasons=parts) if parts else None


def rests_on(stats: dict, verdict: str | None) -> None:
    """Fill in what an A/B run's figures rest on, kept with them (a decision carries its run's stats) and said in
    the export's language: where its arms' order came from (order_said) and, on an adopt, how far its candidate
    calls reach a stall (stall_said)."""
    order = order_said(stats)
    stalls = stall_said(stats) if verdict == "adopt" else None
    for name, said in (("order", order), ("stalls", stalls)):
        stats[name], stats[f"{name}_said"] = (text(said, "en", RUN_WORDS), said) if said else (None, None)


def order_said(stats: dict) -> dict | None:
    """Where the bench gave no `first`, that the arms' order was taken from the order their samples came in, and
    how often that put the baseline first (a said of runs/words.py); None where the bench said it for every pair."""
    emitted, first = stats.get("emitted"), stats.get("emitted_baseline_first")
    if not isinstance(emitted, int) or not isinstance(first, int) or emitted <= 0:
        return None
    return say("order_emitted", first=first, of=emitted)


STALL_SEEN = 0.95
"""The chance of meeting a stall at least once by which stall_said gives the rarest stall a run would have met."""


def stall_said(stats: dict) -> dict | None:
    """On an adopt, what the candidate calls it measured could have seen of a stall that strikes the candidate
    alone now and then (a GC pause, a recompile): the rarest one met with STALL_SEEN probability, and how often one
    as rare as 1 call in as many as were measured goes unseen. The median and the total time see only the stalls
    a run meets, so an adopt says how far its calls reach (a said of runs/words.py); None without counted calls."""
    calls = (stats.get("candidate") or {}).get("n") if isinstance(stats.get("candidate"), dict) else None
    if not isinstance(calls, int) or calls < 1:
        return None
    # the rarest stall 1 in k with 1 − (1 − 1/k)^calls ≥ STALL_SEEN
    k = max(1, int(1 / (1 - (1 - STALL_SEEN) ** (1 / calls))))
    missed = (1 - 1 / calls) ** calls
    return say("stall_reach", calls=calls, k=k, missed=f"{missed:.0%}")


def _repo(lever, plan_path) -> dict | None:
    """The repository the lever's command ran in (its arms' cwd, else the plan's folder) as the run ends."""
    from pathlib import Path

    from optseq.state.code import repo

    return repo.state(lever.arms.cwd if lever.arms is not None else Path(plan_path).resolve().parent)


def _experiment(collected: Collected, rule, result):
    """The best-of-N comparison's summary: per-config figures for display, the MCB result that decides."""
    from optseq.state.runs.stats import arms

    table = arms(collected.samples, rule)
    summary = {"arms": table.to_dict(), "chosen": result.chosen, "reason": result.reason, "rule": _rule_text(rule),
               "best_of": result.to_dict()}
    if result.chosen:
        summary["config"] = config_of(result.chosen)
    return summary, result.chosen, result.reason


def _rule_text(rule) -> str:
    if rule is None:
        return "manual"
    if rule.choose:
        return f"best of N on {rule.choose}" + (f", margin {rule.margin:g}" if rule.margin else "") + (
            f", within {rule.max_cost_ratio:g}× {rule.cost_metric}" if rule.cost_metric else "")
    return f"{rule.metric} sequential bound vs {rule.min_speedup:g}×"
