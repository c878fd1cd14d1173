"""A screen's end: the paired confirmation of a combination whose gains depend on each other, the screen run's
last fields, and the ordinary decisions it makes (adopt or reject by each lever's own rule, in plan order), or
what it measured where it ended early."""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from msgspec.structs import replace

from optseq.state.exits import Exit
from optseq.state.plan.model import Lever
from optseq.state.plan.workload import ARMS_RUN
from optseq.state.runs.host import Record, RunHost
from optseq.state.runs.measured_on import fingerprint
from optseq.state.runs.run_end import Decision, Ending, Move, finish_run
from optseq.state.runs.run_pass import Go
from optseq.state.runs.screen_levers import Measured, Screen, arms_of, rule_of
from optseq.state.screen_record import Call, Confirmed, builtins, qualities as quality_events, samples as sample_events
from optseq.state.store.records import utc_now
from optseq.state.text import ratio_text

if TYPE_CHECKING:  # the fit's numerics are imported when a screen has blocks to fit
    from optseq.state.screen.analysis import Fit
    from optseq.state.screen.screen_passes import LeverCall

CONFIRM_ID = "confirm"
"""The name a confirmation's pseudo-lever goes by in its progress lines."""


@dataclass
class ScreenReport:
    run_id: int
    status: str
    """How the run ended: succeeded | failed | timeout | cancelled | interrupted | unavailable."""
    message: str
    design: str
    """Design.text()."""
    blocks: list = field(default_factory=list)
    """Per block done: its run order."""
    calls: dict[str, Call] = field(default_factory=dict)
    """lever -> the last look's call, with `why` its verdict's reason."""
    said: list = field(default_factory=list)
    """One sentence per significant interaction."""
    decisions: dict = field(default_factory=dict)
    """lever -> adopt | reject, for the levers the screen decided."""
    confirmed: Confirmed | None = None
    launches: int = 0
    fit: dict | None = None

    @property
    def exit_code(self) -> int:
        from optseq.state.runs.lever_run import EXIT

        return EXIT.get(self.status, Exit.RUN_FAILED)

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "kind": "screen", "status": self.status, "message": self.message,
                "design": self.design, "blocks": self.blocks,
                "calls": {lever: builtins(call) for lever, call in self.calls.items()}, "said": self.said,
                "decisions": self.decisions,
                "confirmed": builtins(self.confirmed) if self.confirmed is not None else None,
                "launches": self.launches, "fit": self.fit}


def observations(screen, samples: list, complete: bool = True) -> list:
    """The design's observations from the samples: (block, run, value) of the workload's metric; with `complete`,
    only blocks whose every run came back (a cancelled pass leaves one half done)."""
    from optseq.state.screen.analysis import Observation

    metric = screen.screened.levers[0].arms.metric
    found = [Observation(block=s.block, run=s.index, value=s.value) for s in sample_events(samples)
             if s.metric == metric and s.index is not None and s.block is not None and s.value is not None]
    if not complete:
        return found
    runs = screen.design.block_runs
    counts: dict[int, int] = {}
    for one in found:
        counts[one.block] = counts.get(one.block, 0) + 1
    return [one for one in found if counts[one.block] >= runs]


def finish(host: RunHost, screen: Screen, run_id: int, measured: Measured, go: Go) -> ScreenReport:
    """Record how the screen ended and decide its levers; returns the ScreenReport."""
    from optseq.state.runs.screen_code import codes_of

    outcome, step, tally = measured.outcome, measured.step, measured.tally
    status = "cancelled" if outcome is None else outcome.status
    detail = outcome.detail if outcome is not None else "cancelled before its first block"
    if status == "succeeded" and step is None:
        status, detail = "failed", "the design's runs brought no block to judge"
    calls = dict(step.calls) if step is not None else {}
    confirmed: Confirmed | None = None
    # a lever a guard rejects is no part of the combination to confirm: its gain would carry the others'
    blamed = {lid for lid, (blame, _) in guard_breaks(screen, tally.qualities).items() if blame}
    combination = tuple(lid for lid in (step.confirm if step is not None else ()) if lid not in blamed)
    if status == "succeeded" and combination and not go.control.cancelled:
        confirmed = confirm(host, screen, run_id, combination, go)
        if go.control.cancelled:  # the blocks were judged, but a decision waits on the confirmation cut short
            status, detail = "cancelled", f"cancelled during the confirmation (run {confirmed.run})"
    verdicts, whys = _verdicts(screen, status, calls, confirmed, measured, step.fit if step is not None else None)
    fitted = step.fit if step is not None and step.fit is not None else _fit_so_far(screen, tally.samples)
    fit = fitted.to_dict() if fitted is not None else None
    said = list(step.said) if step is not None else []
    if status != "succeeded":
        detail = f"{detail}; {what_measured(screen, measured, fitted)}"
    record = host.run(run_id)
    stored = builtins(confirmed) if confirmed is not None else None
    fields: Record = {
        "elapsed_s": measured.elapsed_s, "exit_code": outcome.exit_code if outcome is not None else None,
        "detail": detail,
        "passes": measured.passes, "env": tally.env,
        # no one definition: each lever's numbers stand on the run's stack, and the plan's edits are per lever
        "fingerprint": {**fingerprint(tally.env, host.machine.infra()), **codes_of(screen)},
        "samples_file": str(tally.samples_file) if tally.samples else None, "n_samples": len(tally.samples),
        "log": outcome.log_path if outcome is not None else None, "warnings": tally.warnings[:40],
        "summary": {"fit": fit} if fit else {},
        # the part as the run began it, its keys kept whole (this writes it; screen_record reads it)
        "screen": {**(record.screen or {}), "blocks": measured.blocks, "launches": measured.launches,
                   "step": step.to_dict() if step is not None else None, "confirmed": stored,
                   "verdicts": verdicts, "whys": whys, "spent": measured.spent},
        "testbed": record.testbed or host.testbed,
    }
    if status in ("failed", "timeout") and outcome is not None:
        fields["log_tail"] = outcome.log_tail
    runs = (run_id, confirmed.run) if confirmed is not None and confirmed.run else (run_id,)
    end = finish_run(host, Ending(
        run_id, status, None, fields, name_refused=True,
        moves=tuple(Move(lever.id, verdicts.get(lever.id), {"kind": "screen", "detail": whys.get(lever.id, detail)})
                    for lever in screen.screened.levers),
        # in plan order: adopted together, they join the stack so
        decisions=tuple(Decision(lever.id, verdicts[lever.id], why=whys[lever.id], rule=rule_text(lever), runs=runs,
                                 source="screen")
                        for lever in screen.screened.levers if verdicts.get(lever.id) in ("adopt", "reject"))))
    decisions, notes = end.decided, end.said
    message = detail if status != "succeeded" else (
        "; ".join(f"{lid} {v}" for lid, v in verdicts.items()) + (f" ({'; '.join(notes)})" if notes else ""))
    return ScreenReport(run_id=run_id, status=status, message=message, design=screen.design.text(),
                        blocks=measured.blocks,
                        calls={lid: _call(c, whys.get(lid, c.reason)) for lid, c in calls.items()},
                        said=said, decisions=decisions, confirmed=confirmed, launches=measured.launches, fit=fit)


def _call(call: LeverCall, why: str) -> Call:
    """A look's call as the report says it, with why its lever was decided so."""
    return Call(lever=call.lever, outcome=call.outcome, reason=call.reason, low=call.low, high=call.high,
                more_blocks=call.more_blocks, why=why)


def _verdicts(screen, status: str, calls: dict[str, LeverCall], confirmed: Confirmed | None, measured, fit=None):
    """Each lever's verdict (adopt | reject | inconclusive; none where the screen did not finish) and its why."""
    verdicts: dict[str, str] = {}
    whys: dict[str, str] = {}
    if status != "succeeded":
        return verdicts, whys
    guards = guard_breaks(screen, measured.tally.qualities)
    for lever in screen.screened.levers:
        call = calls.get(lever.id)
        outcome, reason = (call.outcome, call.reason or "") if call is not None else (None, "")
        high = call.high if call is not None else None
        own = gain_within(fit, lever.id, confirmed.levers) if confirmed and fit is not None else None
        if outcome == "confirm":
            if confirmed and lever.id in confirmed.levers and confirmed.outcome == "adopt" and (
                    own is None or own >= lever.rule.min_speedup):
                outcome = "adopt"
                reason = f"{reason}; confirmed with {' + '.join(confirmed.levers)} (run {confirmed.run}): " \
                         f"{confirmed.reason}"
            elif confirmed and lever.id in confirmed.levers and confirmed.outcome == "adopt":
                # the combination pays, but not through this lever: its own share is under its threshold, and
                # where its bound lies under it too it is rejected as a lever run would be
                outcome = "reject" if high is not None and high < lever.rule.min_speedup else "inconclusive"
                reason = (f"{reason}; {' + '.join(confirmed.levers)} confirmed (run {confirmed.run}), but "
                          f"with the others on its own gain is {_x(own)}, under its {lever.rule.min_speedup:g}×")
            else:
                best = best_gain(fit, lever.id, screen.screened.ids) if fit is not None else None
                # under its threshold on average (its bound) and beside every partner (the estimate): no
                # combination makes it pay
                under = best is not None and best < lever.rule.min_speedup and high is not None \
                    and high < lever.rule.min_speedup
                outcome = "reject" if under else "inconclusive"
                reason = (f"{reason}; not confirmed" + (
                    f" with {' + '.join(confirmed.levers)} (run {confirmed.run}, {confirmed.outcome}): "
                    f"{confirmed.reason}" if confirmed else "")
                    + (f"; its gain beside any one lever is {_x(best)} at most, under its "
                       f"{lever.rule.min_speedup:g}×" if under else ""))
        broken = guards.get(lever.id)
        if broken and outcome in ("adopt", "inconclusive", None, "confirm"):
            # a gain that breaks a guard is no gain; one broken with the lever off too blames nothing on it
            outcome, reason = ("reject", broken[1]) if broken[0] else ("inconclusive", f"{reason}; {broken[1]}")
        elif outcome not in ("adopt", "reject"):
            outcome = "inconclusive"
            reason += f"; {settle(screen, measured, call.more_blocks if call is not None else None)}"
        verdicts[lever.id], whys[lever.id] = outcome, reason
    return verdicts, whys


def gain_within(fit, lever: str, combination) -> float | None:
    """The screen's estimate of `lever`'s gain with the combination's other levers on: its main effect times the
    square root of each interaction with them (in ±1 coding, a×b's ratio of ratios is the square of how far b
    moves a's ratio from its mean); None where the fit lacks it."""
    main = next((e for e in fit.mains if e.levers == (lever,)), None)
    if main is None:
        return None
    gain = main.ratio
    for effect in fit.interactions:
        if lever in effect.levers and all(other in combination for other in effect.levers):
            gain *= math.sqrt(effect.ratio)
    return gain


def best_gain(fit, lever: str, factors) -> float | None:
    """`lever`'s largest estimated gain alone or beside any one other lever of the screen."""
    found = [g for other in factors if (g := gain_within(fit, lever, (lever, other))) is not None]
    return max(found) if found else None


def guard_breaks(screen, qualities: list) -> dict[str, tuple[bool, str]]:
    """lever -> (whether it is to blame, why) for the levers a workload guard broke in a design run with their
    change on. A lever is to blame where the guard held in every run with it off; where no one lever explains a
    guard's breaks, every lever on in them is left undecided."""
    broken: dict[str, set[int]] = {}
    for q in quality_events(qualities):
        name, _, run = q.name.rpartition("@run-")
        value, limit = q.value, q.limit
        if not name or not run.isdigit() or value is None or limit is None:
            continue
        if (value < limit) if q.bound == "min" else not (value <= limit):  # a NaN breaks it
            broken.setdefault(name, set()).add(int(run))
    found: dict[str, tuple[bool, str]] = {}
    for guard, runs in sorted(broken.items()):
        on = {lever: sorted(i for i in runs if screen.design.runs[i][j] > 0)
              for j, lever in enumerate(screen.screened.ids)}
        blamed = [lever for lever, hit in on.items() if len(hit) == len(runs)]
        for lever, hit in on.items():
            if lever in found or not hit or (blamed and lever not in blamed):
                continue
            where = f"run{'s' * (len(hit) > 1)} {', '.join(map(str, hit))}"
            found[lever] = (bool(blamed), f"guard {guard} broken in the design runs with {lever} on ({where})"
                            + (", never with it off" if blamed else
                               ", and in runs with it off: no one lever's change explains it"))
    return found


def settle(screen, measured, more_blocks: int | None = None) -> str:
    """What more would settle an undecided lever: the blocks its last look says would likely settle it (the
    budget they need), or another run."""
    runs = screen.design.block_runs
    if measured.spent:
        spent = f"its budget of {screen.budget} launches is spent ({len(measured.blocks)} blocks of {runs})"
        if more_blocks == 0:  # its call says already that it lies at its threshold, where no budget settles it
            return spent
        budget = screen.budget + max(more_blocks or 2, 1) * runs
        return f"{spent}; more blocks would likely settle it: --budget {budget}, or run it on its own"
    return "a screen with more blocks, or a run of it on its own, would settle it"


def _fit_so_far(screen, samples: list) -> Fit | None:
    """The effects of the blocks done, where a screen ended before its first look (or between looks)."""
    from optseq.state.screen.analysis import AnalysisError, fit

    found = observations(screen, samples)
    if not found:
        return None
    try:
        return fit(screen.design, found, screen.screened.levers[0].arms.higher_is_better)
    except (AnalysisError, ValueError, ArithmeticError):
        return None


def what_measured(screen, measured, fit: Fit | None) -> str:
    """What a screen that ended early measured: blocks done, launches, the effects so far."""
    # launches that gave their number (warm-ups too): a launch that failed or was stopped measured nothing
    n = measured.launches
    done = f"{len(measured.blocks)} block{'s' * (len(measured.blocks) != 1)} done, {n} launch{'es' * (n != 1)} measured"
    mains = fit.mains if fit is not None else ()
    effects = ", ".join(f"{m.name} {ratio_text(m.ratio, 3)}×" for m in mains if math.isfinite(m.ratio))
    return done + (f"; effects so far: {effects}" if effects else "; no effects yet (too few blocks)") + \
        "; nothing decided"


def rule_text(lever) -> str:
    return f"{lever.rule.metric} screen vs {lever.rule.min_speedup:g}×"


def confirm(host: RunHost, screen: Screen, screen_run: int, levers: tuple[str, ...], go: Go) -> Confirmed:
    """The combination's levers on the stack against the stack alone, by the paired test a lever run uses
    (ABPasses over command pairs), recorded as a run of its own (`kind = "confirm"`); its threshold is the
    product of the levers' min_speedup (each must pay its own)."""
    from optseq.state.runs.lever_run import measure
    from optseq.state.runs.screen_code import confirm_code

    chosen = [lv for lv in screen.screened.levers if lv.id in levers]
    first = chosen[0]
    args: list[str] = []
    env: dict[str, str] = {}
    for lever in chosen:
        args += list(arms_of(lever).candidate_args)
        env.update(dict(arms_of(lever).candidate_env))
    arms = replace(arms_of(first), candidate_args=tuple(args), candidate_env=tuple(sorted(env.items())))
    rules = [rule_of(lv) for lv in chosen]
    rule = replace(rules[0], min_speedup=math.prod(r.min_speedup for r in rules),
                   repeats=max(r.repeats for r in rules), max_repeats=max(r.max_repeats for r in rules))
    lever = Lever(id=CONFIRM_ID, title="confirm", kind="speedup", index=-1, run=ARMS_RUN, rule=rule, arms=arms,
                  timeout_s=sum(lv.timeout_s for lv in chosen))
    spec = arms.to_dict(screen.screened.stack)
    code = confirm_code(screen, levers, spec)  # a screen of branch levers: the combination's commit
    go.on_log(f"[optseq] confirming {' + '.join(levers)} against the stack by the paired test "
              f"(threshold {rule.min_speedup:.4g}×)")
    with host.lock:
        with host.writing():
            infra = host.machine.infra()
            record = host.append_run({"kind": "confirm", "lever": None, "status": "running", "argv": list(ARMS_RUN),
                                     "pid": os.getpid(), "started": utc_now(), "infra": infra, "passes": 0,
                                     "runner": go.runner.name, "arms": spec, "testbed": host.testbed,
                                     "confirm": {"screen": screen_run, "levers": list(levers),
                                                 "threshold": rule.min_speedup, **code}})
            run_dir = host.run_dir(record["id"])
    go.arms = spec
    outcome, tally, passes, step, started = measure(host, lever, record["id"], run_dir, infra, go)
    tally.elapsed_s = time.monotonic() - started
    verdict, reason, summary = "inconclusive", outcome.detail, {}
    status = "failed" if step is not None and step.failure else outcome.status
    if status == "succeeded" and step is not None and step.stats is not None and not step.error:
        verdict, reason = step.verdict.outcome, step.verdict.reason
        summary = {"stats": step.stats.to_dict(), "verdict": step.verdict.to_dict(),
                   "rule": f"{rule.metric} sequential bound vs {rule.min_speedup:.4g}×"}
    elif status != "succeeded":
        verdict, reason = "inconclusive", (step.failure if step is not None and step.failure else outcome.detail)
    fields = {"elapsed_s": tally.elapsed_s, "exit_code": outcome.exit_code,
              "detail": reason, "passes": passes, "env": tally.env, "summary": summary,
              "fingerprint": fingerprint(tally.env, infra), "n_samples": len(tally.samples),
              "samples_file": str(tally.samples_file) if tally.samples else None, "log": outcome.log_path,
              "warnings": tally.warnings[:40], "pass_counts": tally.passes, "testbed": host.testbed}
    # a run of no lever: the screen's end moves its levers and decides
    finish_run(host, Ending(record["id"], status, verdict, fields, marks_stack=False))
    if code:
        return Confirmed(levers=list(levers), run=record["id"], outcome=verdict, reason=reason, status=status,
                         commit=code["code"]["candidate"]["commit"])
    return Confirmed(levers=list(levers), run=record["id"], outcome=verdict, reason=reason, status=status)


def _x(gain: float | None) -> str:
    """A gain in a reason, by the one rule for ratios (state/text.py); its branch has it, else `?`."""
    return "?" if gain is None else f"{ratio_text(gain, 3)}×"
