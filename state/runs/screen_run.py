"""`optseq --run screen [LEVER …]`: several levers decided together by a two-level design over the plan's workload.

One run record (`kind = "screen"`) holds the design, its seed and every block's order. Each pass launches the arms
driver in its design mode (engine/arms/points.py) over the blocks ScreenPasses asks for, each design run its own
process; between passes ScreenPasses judges every lever on all blocks so far, until each is decided or the budget is
spent. The record's end and the decisions it makes are screen_finish's."""
from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from optseq.state.errors import InputError
from optseq.state.plan.model import Lever
from optseq.state.plan.workload import ARMS_RUN
from optseq.state.runs import screen_levers
from optseq.state.runs.host import RunHost
from optseq.state.runs.lever_run import RunControl
from optseq.state.runs.run_pass import Collected, EventSink, Go, LogSink, Pass, launch, launch_token
from optseq.state.runs.screen_code import code_of, combinations, trees_spec, worktrees
from optseq.state.runs.screen_levers import Measured, Screen, arms_of, rule_of
from optseq.state.store.records import utc_now

if TYPE_CHECKING:  # the screen's end, imported when a screen has run
    from optseq.state.runs.screen_finish import ScreenReport

SCREEN_ID = "screen"
"""The name the screen's pseudo-lever goes by in its progress lines; no lever may be a run keyword, nor this."""


def prepare(host: RunHost, named: Iterable[str], budget: int | None = None) -> Screen:
    """The screen `--run screen` would run: InputError (one line) before anything runs or is recorded."""
    from optseq.state.screen.design import DesignError, choose

    screened = screen_levers.choose(host, named)
    if budget is not None and budget < 1:
        raise InputError(f"--budget {budget}: a screen's budget is a number of launches, at least 1")
    spend = budget if budget is not None else screen_levers.budget_of(screened.levers)
    try:
        design = choose(screened.ids, spend)
    except DesignError as exc:
        raise InputError(f"--run screen: {exc}") from None
    workload = host.plan.workload
    assert workload is not None  # screen_levers.choose refused a plan without one
    warmup = workload.warmup if workload.warmup is not None else 1
    screen = Screen(screened, design, spend, secrets.randbelow(2 ** 31), warmup)
    combinations(screen)
    return screen






def run_screen(host: RunHost, screen: Screen, *, on_event: EventSink | None = None, on_log: LogSink | None = None,
               control: RunControl | None = None) -> ScreenReport:
    """Blocking: record, launch block after block, judge, decide (screen_finish); returns a ScreenReport."""
    from optseq.state.runners.interface import RunnerError
    from optseq.state.runs import screen_finish

    control = control or RunControl()
    try:
        runner = host.runner
    except RunnerError as exc:
        raise InputError(str(exc)) from None
    with contextlib.ExitStack() as holds:
        for lever_id in screen.screened.ids:  # every lever of the design is held: none runs elsewhere meanwhile
            holds.callback(host.hold(lever_id).release)
        screen.holds = holds  # and the worktrees its runs launch in, whoever prunes the cache meanwhile
        worktrees(screen, (screen.screened.on(levels) for levels in screen.design.runs))
        with host.lock:
            with host.writing():
                for lever_id in screen.screened.ids:
                    host.check_runnable(lever_id)  # after the catch-up: the state as every process left it
                infra = host.machine.infra()
                infra["adopted"] = [lid for lid in infra["adopted"] if lid not in screen.screened.ids]
                record = host.append_run({
                    "kind": "screen", "lever": None, "status": "running", "argv": list(ARMS_RUN), "pid": os.getpid(),
                    "started": utc_now(), "infra": infra, "passes": 0, "runner": runner.name,
                    "testbed": host.testbed, "arms": base_spec(screen), "screen": {
                        "levers": list(screen.screened.ids), "design": screen.design.to_dict(),
                        "seed": screen.seed, "blocks": [], "budget": screen.budget, "launches": 0, "step": None,
                        "confirmed": None, "rules": {lv.id: rule_of(lv).min_speedup for lv in screen.screened.levers},
                        "left_out": list(screen.screened.left_out), **code_of(screen)}})
                run_dir = host.run_dir(record["id"])
        go = Go(runner=runner, on_event=on_event, on_log=on_log or (lambda line: None), control=control)
        measured = measure(host, screen, record["id"], run_dir, infra, go)
        return screen_finish.finish(host, screen, record["id"], measured, go)


def base_spec(screen: Screen) -> dict:
    """The arms driver's spec every pass shares: the workload, its metric and guards, the stack; for a screen of
    branch levers, where the workload runs in each commit's worktree and the setup run there once."""
    return {**arms_of(screen.screened.levers[0]).to_dict(screen.screened.stack), **trees_spec(screen)}


def points(screen: Screen) -> list[dict]:
    """Each run of the design as the driver launches it: argv and environment, and for a screen of branch levers
    the worktree of the commit it launches (made by `worktrees` before)."""
    found = []
    for levels in screen.design.runs:
        argv, env = screen.screened.point(levels)
        commit = screen.screened.commit(levels)
        found.append({"argv": list(argv), "env": env, **({"tree": screen.trees[commit]} if commit else {})})
    return found




def pseudo_lever(screen: Screen) -> Lever:
    """What run_pass launches: the arms driver, within the levers' timeouts together."""
    timeout = sum(lever.timeout_s for lever in screen.screened.levers)
    return Lever(id=SCREEN_ID, title="screen", kind="speedup", index=-1, run=ARMS_RUN, timeout_s=timeout)


def measure(host: RunHost, screen: Screen, run_id: int, run_dir: Path, infra: dict, go: Go) -> Measured:
    from optseq.state.runs.screen_finish import observations
    from optseq.state.screen.design import order
    from optseq.state.screen.screen_passes import ScreenPasses

    lever = pseudo_lever(screen)
    rules = {lv.id: rule_of(lv) for lv in screen.screened.levers}
    judge = ScreenPasses(screen.design, rules, arms_of(screen.screened.levers[0]).higher_is_better, screen.max_blocks)
    tally = Collected(samples_file=run_dir / "samples.jsonl")
    found = Measured(outcome=None, tally=tally, passes=0, blocks=[])
    spec, runs = {**base_spec(screen), "points": points(screen)}, screen.design.block_runs
    plain = next((i for i, levels in enumerate(screen.design.runs) if all(v < 0 for v in levels)), None)
    tag, begun = host.store_tag, host.run(run_id).started or ""
    started = time.monotonic()
    more = min(judge.requested, screen.max_blocks)
    pending: dict[int, list] = {}  # the blocks of the pass under way and their orders, until each is whole
    counted: dict[int, int] = {}
    heard = go.on_event

    def event(ev: dict) -> None:
        # each block on the record as its last run comes back: a screen killed mid-pass says what it measured
        block = ev.get("block")
        if ev.get("event") == "sample" and block in pending and ev.get("metric") == spec["metric"]:
            counted[block] = counted.get(block, 0) + 1
            if counted[block] == runs:
                found.blocks.append(pending.pop(block))
                found.launches = len(tally.samples) + screen.warmup * found.passes
                _progress(host, run_id, found)
        if heard is not None:
            heard(ev)

    go.on_event = event
    while more > 0 and not go.control.cancelled:
        found.passes += 1
        first = len(found.blocks) + 1
        orders = [list(order(screen.design, block, screen.seed)) for block in range(first, first + more)]
        pending.update(zip(range(first, first + more), orders))
        sequence = [[block, index] for block, one in zip(range(first, first + more), orders) for index in one]
        go.arms = {**spec, "sequence": sequence, "plain": plain}
        one = Pass(host, lever, run_id, found.passes, None, tally, go, elapsed_s=time.monotonic() - started,
                   token=launch_token(tag, run_id, begun, found.passes))
        go.on_log(f"[optseq] pass {found.passes}: block{'s' * (more > 1)} {first}"
                  + (f" to {first + more - 1}" if more > 1 else "") + f", {len(sequence)} launches")
        found.outcome = launch(one, run_dir, infra, lever.timeout_s - (time.monotonic() - started))
        pending.clear()  # a block the pass left half done is none of the design's
        found.launches = len(tally.samples) + screen.warmup * found.passes
        _progress(host, run_id, found)
        if found.outcome.status != "succeeded":
            break
        found.step = judge.after_pass(observations(screen, tally.samples))
        if judge.design is not screen.design:  # folded over: the next blocks run the other half
            screen.design = judge.design
            worktrees(screen, (screen.screened.on(levels) for levels in screen.design.runs))
            spec["points"] = points(screen)
        _progress(host, run_id, found, screen)
        if found.step.note:
            go.on_log(f"[optseq] {found.step.note}")
        more = min(found.step.more, screen.max_blocks - len(found.blocks))
        undecided = any(call.outcome not in ("adopt", "reject") for call in found.step.calls.values())
        found.spent = undecided and (more <= 0 < found.step.more or len(found.blocks) >= screen.max_blocks)
    found.elapsed_s = time.monotonic() - started
    return found


def _progress(host: RunHost, run_id: int, found: Measured, folded: Screen | None = None) -> None:
    """The blocks run and the last look, on the record as the screen goes: what a killed screen measured (and,
    where the design was folded over, the design its blocks now run)."""
    from optseq.state.store.storage import StoreUnwritable

    record = host.record(run_id)
    screen = dict(record.get("screen") or {}, blocks=found.blocks, launches=found.launches,
                  step=found.step.to_dict() if found.step is not None else None)
    if folded is not None and folded.design.fold:
        screen.update(design=folded.design.to_dict(), **code_of(folded))
    try:
        with host.lock, host.writing():
            host.update(run_id, {"screen": screen})
    except StoreUnwritable:
        pass  # the samples file and the pass logs hold what was measured; the end says what it can
