"""Which levers one screen decides together: command-pair levers that change the plan's one `[workload]`, share its
metric, and compose on the current stack with each other; branch levers among them where their code can be combined
on their shared baseline (state/code/combine.py), each design run then launched in a worktree of the commit that
holds the code of the branch levers it puts on. Named levers that cannot are refused in one line; by default the
ready ones that can are taken and the others said, one line each."""
from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optseq.state.code.combine import Combinations
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
    code: Combinations | None = None
    """The branch levers' commits on their baseline, where the screen has any: each run's code is a combination."""

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

    def on(self, levels) -> list[str]:
        """The levers a design run puts on (levels: +1/-1 per lever), in plan order."""
        return [lever.id for lever, level in zip(self.levers, levels) if level > 0]

    def commit(self, levels) -> str | None:
        """The commit a design run launches: the baseline with the code of its branch levers that are on merged in;
        None for a screen of no branch lever (its runs launch the workload where the plan says)."""
        return self.code.commit(self.on(levels)) if self.code is not None else None


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
    trees: dict[str, dict] = field(default_factory=dict)
    """commit -> its worktree as the arms driver reads it, for a screen of branch levers: made as the screen starts
    (and as a fold-over or the confirmation asks for another combination), held on `holds` until it ends."""
    holds: contextlib.ExitStack | None = None

    @property
    def max_blocks(self) -> int:
        return max(1, self.budget // self.design.block_runs)

    def asks(self) -> str:
        """What the screen will spend, said before it starts."""
        runs, code = self.design.block_runs, self.screened.code
        return (f"{runs} runs a block, each its own launch; blocks until every lever is decided, up to "
                f"{self.max_blocks} ({self.max_blocks * runs} launches of a budget of {self.budget})"
                + (f", and {self.warmup} warm-up launch{'es' * (self.warmup != 1)} a pass" if self.warmup else "")
                + (f"; each run in a worktree of the commit combining the code of its branch levers that are on "
                   f"({', '.join(b.lever for b in code.branches)}) on {code.base_ref} ({code.base[:7]})"
                   if code is not None else ""))


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
    levers, code = combine_branches(levers, bool(named), left_out)
    ids = [lever.id for lever in levers]
    if len(levers) < MIN_LEVERS or len(levers) > MAX_LEVERS:
        got = f"{len(levers)}" + (f" ({', '.join(ids)})" if ids else "")
        why = "; ".join(left_out)
        raise InputError(f"--run screen: a screen needs {MIN_LEVERS} to {MAX_LEVERS} levers that compose on the "
                         f"stack, got {got}" + (f"; {why}" if why else "")
                         + ("" if named else "; name them: optseq --run screen LEVER LEVER …"))
    adopted = [lid for lid in host.machine.stack_order() if lid not in ids]
    on = compose([(lid, host.plan.lever(lid).arms if host.plan.has_lever(lid) else None) for lid in adopted])
    return Screened(tuple(levers), tuple(left_out), on, code)


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
    if arms.branch:
        return _branch_why_not(host, lever)
    return None


CODE_REACHES = ("local", "ray")
"""Runners whose launches run a screen's combined code: the local one in this machine's worktrees, Ray's with the
commits shipped as each job's working directory (state/runners/ray_trees.py)."""


def _branch_why_not(host: RunHost, lever: Lever) -> str | None:
    """Why a branch lever's code cannot be one factor: refs that name no commit, a candidate in its baseline's
    history, a runner that launches elsewhere and cannot take the code there (the worktrees are this machine's)."""
    from optseq.state.code import branch
    from optseq.state.runners.interface import RunnerError

    arms = arms_of(lever)
    try:
        runner = host.runner.name
    except RunnerError:
        runner = "local"  # the screen's start refuses a runner that cannot be set up, in its own words
    if runner not in CODE_REACHES:
        return (f"is a branch lever and the runner is {runner}: a screen's combined code is checked out on this "
                f"machine, and the {runner} runner does not ship it; run it on its own")
    try:
        branch.check_apart(branch.resolve(arms.cwd, arms.baseline_ref, str(arms.candidate_ref), lever.id), lever.id)
    except InputError as exc:
        return str(exc).removeprefix(f"{lever.id}: ")
    return None


def combine_branches(levers: list[Lever], named: bool, left_out: list[str]) -> tuple[list[Lever], Combinations | None]:
    """The levers whose code combines, in plan order, and their Combinations (None without a branch lever). A
    branch lever whose baseline is not the first one's, or whose code conflicts with the baseline's or with a lever
    taken before it, is left out (said in `left_out`); named, it is refused: InputError naming both sides and a
    conflicting file."""
    from optseq.state.code import branch, combine
    from optseq.state.code import git as g

    code: Combinations | None = None
    kept: list[Lever] = []
    for lever in levers:
        arms = arms_of(lever)
        if not arms.branch:
            kept.append(lever)
            continue
        commits = branch.resolve(arms.cwd, arms.baseline_ref, str(arms.candidate_ref), lever.id)
        one = combine.Branch(lever.id, commits.candidate.ref, commits.candidate.commit)
        if code is None:
            code = Combinations(commits.repo, commits.rel, commits.baseline.ref, commits.baseline.commit,
                                setup=tuple(arms.setup))
        why = None
        if commits.baseline.commit != code.base:
            why = (f"measures against {commits.baseline.text()}, not the baseline of the screen's other branch "
                   f"levers, {code.base_ref} ({g.short(code.base)}): one screen's runs share one baseline")
        else:
            try:
                combine.combined(code.repo, code.base, [*code.branches, one])
            except combine.Clash as clash:
                side = (f"the baseline {code.base_ref} ({g.short(code.base)})" if clash.other is None
                        else f"{clash.other}'s")
                why = (f"cannot join the screen: its code ({one.ref}, {g.short(one.commit)}) conflicts with {side} "
                       f"in {clash.files[0]}: no one worktree holds both; screen them apart")
            except g.GitError as exc:
                why = f"cannot join the screen: {exc}"
        if why is None:
            code.branches += (one,)
            kept.append(lever)
        elif named:
            raise InputError(f"--run screen: {lever.id} {why}")
        else:
            left_out.append(f"{lever.id}: left out: {why}")
    return kept, (code if code is not None and code.branches else None)


def budget_of(levers) -> int:
    """The launches a screen may spend unless told: what the levers' own runs could spend, one at a time (each
    pair of their rule is two launches)."""
    return sum(2 * lever.rule.max_repeats for lever in levers)
