"""Which levers one screen decides together: command-pair levers that change the plan's one `[workload]`, share its
metric, and compose on the current stack with each other. Named levers that cannot are refused in one line; by
default the ready ones that can are taken and the others said, one line each."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from optseq.state.errors import InputError
from optseq.state.plan.model import Lever, Rule
from optseq.state.plan.workload import Arms, Stack, Workload, apply_args, compose, conflict
from optseq.state.runners.interface import RunOutcome
from optseq.state.runs.host import RunHost
from optseq.state.runs.run_pass import Collected
from optseq.state.screen.design import Design

if TYPE_CHECKING:  # the screen's statistics, imported where a screen looks at its blocks
    from optseq.state.screen.screen_passes import ScreenStep

MIN_LEVERS, MAX_LEVERS = 2, 8
"""A two-level design needs two factors to be one; past eight its fractions' aliasing says too little."""


@dataclass(frozen=True)
class Screened:
    levers: tuple[Lever, ...]
    """The plan's Lever objects, in plan order: the design's factors A, B, C, … in that order."""
    left_out: tuple[str, ...]
    """By default: each ready lever the screen cannot take, and why, one line each."""
    stack: Stack
    """What every run of the design carries: the adopted levers' changes, the screened ones left out."""

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(lever.id for lever in self.levers)

    def point(self, levels) -> tuple[tuple[str, ...], dict[str, str]]:
        """One design run's command and environment (levels: +1/-1 per lever): the stack, then each lever's change
        that is on, in plan order."""
        workload = arms_of(self.levers[0])
        argv = apply_args(workload.baseline, self.stack.args)
        env = {**dict(workload.workload_env), **dict(self.stack.env)}
        for lever, level in zip(self.levers, levels):
            if level > 0:
                argv = apply_args(argv, arms_of(lever).candidate_args)
                env.update(dict(arms_of(lever).candidate_env))
        return argv, env


def arms_of(lever: Lever) -> Arms:
    """A screened lever's arms: `choose` takes command-pair levers alone."""
    if lever.arms is None:
        raise ValueError(f"{lever.id} is no command-pair lever: no screen takes it")
    return lever.arms


def rule_of(lever: Lever) -> Rule:
    """A screened lever's rule: `choose` takes speedup levers with a rule alone."""
    if lever.rule is None:
        raise ValueError(f"{lever.id} has no rule: no screen takes it")
    return lever.rule


@dataclass
class Screen:
    """A screen about to run: its levers, its design and what it may spend."""

    screened: Screened
    design: Design
    budget: int
    """Launches of the design's runs the screen may spend (warm-ups come on top: `warmup` a pass)."""
    seed: int
    warmup: int

    @property
    def max_blocks(self) -> int:
        return max(1, self.budget // self.design.block_runs)

    def asks(self) -> str:
        """What the screen will spend, said before it starts."""
        runs = self.design.block_runs
        return (f"{runs} runs a block, each its own launch; blocks until every lever is decided, up to "
                f"{self.max_blocks} ({self.max_blocks * runs} launches of a budget of {self.budget})"
                + (f", and {self.warmup} warm-up launch{'es' * (self.warmup != 1)} a pass" if self.warmup else ""))


@dataclass
class Measured:
    """What a screen's passes left: the last pass's outcome, the samples, the blocks run, the last look."""

    outcome: RunOutcome | None
    tally: Collected
    passes: int
    blocks: list[list[int]]
    """Per block launched: its order (run indices), in the order run."""
    step: ScreenStep | None = None
    """The last look (None before one)."""
    launches: int = 0
    elapsed_s: float = 0.0
    spent: bool = False
    """The budget ran out with levers undecided."""


def choose(host: RunHost, named: Iterable[str]) -> Screened:
    """The levers of `optseq --run screen [LEVER …]`; InputError (one line) before anything runs or is stored."""
    workload = host.plan.workload
    if workload is None or workload.source is None:
        raise InputError(f"{host.plan.path}: a screen launches the plan's [workload] with its levers' changes; "
                         + ("declare one" if workload is None else "workload.metric: missing"))
    named = list(named)
    twice = next((lid for i, lid in enumerate(named) if lid in named[:i]), None)
    if twice:
        raise InputError(f"--run screen: {twice} is named twice")
    left_out: list[str] = []
    if named:
        for lever_id in named:
            why = _why_not(host, host.lever(lever_id), workload)
            if why:
                raise InputError(f"--run screen: {lever_id} {why}")
        levers = [host.lever(lid) for lid in named]
    else:
        levers = []
        for lever_id in host.machine.runnable(("ready", "stale")):
            lever = host.lever(lever_id)
            why = _why_not(host, lever, workload)
            if why:
                left_out.append(f"{lever_id}: left out: {why}")
            else:
                levers.append(lever)
    levers.sort(key=lambda lever: lever.index)
    ids = [lever.id for lever in levers]
    for i, lever in enumerate(levers):
        for other in levers[:i]:
            shared = sorted(set(arms_of(lever).changes()) & set(arms_of(other).changes()))
            if shared:
                raise InputError(f"--run screen: {other.id} and {lever.id} both change {shared[0]}: one design "
                                 "cannot switch one key two ways; screen them apart")
    if len(levers) < MIN_LEVERS or len(levers) > MAX_LEVERS:
        got = f"{len(levers)}" + (f" ({', '.join(ids)})" if ids else "")
        why = "; ".join(left_out)
        raise InputError(f"--run screen: a screen needs {MIN_LEVERS} to {MAX_LEVERS} levers that compose on the "
                         f"stack, got {got}" + (f"; {why}" if why else "")
                         + ("" if named else "; name them: optseq --run screen LEVER LEVER …"))
    adopted = [lid for lid in host.machine.stack_order() if lid not in ids]
    on = compose([(lid, host.plan.lever(lid).arms if host.plan.has_lever(lid) else None) for lid in adopted])
    return Screened(tuple(levers), tuple(left_out), on)


def _why_not(host, lever, workload) -> str | None:
    """Why `lever` cannot be one factor of a screen now, in words that follow its id; None if it can."""
    arms = lever.arms
    if arms is None:
        return ("is a protocol bench (it measures its own two arms): a screen launches the workload with each "
                "lever's change, so only command-pair levers of the [workload] take part")
    if lever.kind != "speedup" or lever.rule is None or lever.rule.choose:
        return f"is a {lever.kind} lever: a screen decides speedup levers (adopt or reject by min_speedup)"
    if arms.whole:
        return "is written as two whole commands: there is no change of the workload to compose"
    if arms.branch:
        return ("is a branch lever: its code is a commit, and a screen does not yet merge several branches' code "
                "into one worktree; run it on its own")
    if tuple(arms.baseline) != tuple(workload.command) or arms.cwd != workload.cwd:
        return "runs its own command, not the plan's [workload]: the design's runs launch the workload"
    if arms.metric != workload.metric or lever.rule.metric != workload.metric:
        return (f"is decided on {lever.rule.metric}, not the workload's {workload.metric}: every lever of a screen "
                "is judged on the one metric its runs print")
    try:
        host.check_runnable(lever.id)
    except InputError as exc:
        return str(exc).removeprefix(f"{lever.id} ").removeprefix(f"{lever.id}: ")
    adopted = [(lid, host.plan.lever(lid).arms) for lid in host.machine.adoption_order()
               if host.plan.has_lever(lid) and lid != lever.id]
    clash = conflict(lever.id, arms, adopted)
    if clash:
        return f"cannot join the stack: {clash}"
    return None


def budget_of(levers) -> int:
    """The launches a screen may spend unless told: what the levers' own runs could spend, one at a time (each
    pair of their rule is two launches)."""
    return sum(2 * lever.rule.max_repeats for lever in levers)
