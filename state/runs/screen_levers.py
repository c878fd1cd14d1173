"""Which levers one screen decides together: command-pair levers that change the plan's one `[workload]`, share its
metric, and compose on the current stack with each other. Named levers that cannot are refused in one line; by
default the ready ones that can are taken and the others said, one line each."""
from __future__ import annotations

from dataclasses import dataclass

from optseq.state.errors import InputError
from optseq.state.plan.workload import Stack, apply_args, compose, conflict

MIN_LEVERS, MAX_LEVERS = 2, 8
"""A two-level design needs two factors to be one; past eight its fractions' aliasing says too little."""


@dataclass(frozen=True)
class Screened:
    levers: tuple
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
        workload = self.levers[0].arms
        argv = apply_args(workload.baseline, self.stack.args)
        env = {**dict(workload.workload_env), **dict(self.stack.env)}
        for lever, level in zip(self.levers, levels):
            if level > 0:
                argv = apply_args(argv, lever.arms.candidate_args)
                env.update(dict(lever.arms.candidate_env))
        return argv, env


def choose(seq, named) -> Screened:
    """The levers of `optseq --run screen [LEVER …]`; InputError (one line) before anything runs or is stored."""
    workload = seq.plan.workload
    if workload is None or workload.source is None:
        raise InputError(f"{seq.plan.path}: a screen launches the plan's [workload] with its levers' changes; "
                         + ("declare one" if workload is None else "workload.metric: missing"))
    named = list(named)
    twice = next((lid for i, lid in enumerate(named) if lid in named[:i]), None)
    if twice:
        raise InputError(f"--run screen: {twice} is named twice")
    if named:
        for lever_id in named:
            why = _why_not(seq, seq.lever(lever_id), workload)
            if why:
                raise InputError(f"--run screen: {lever_id} {why}")
        levers, left_out = [seq.lever(lid) for lid in named], []
    else:
        levers, left_out = [], []
        for lever_id in seq.machine.runnable(("ready", "stale")):
            lever = seq.lever(lever_id)
            why = _why_not(seq, lever, workload)
            if why:
                left_out.append(f"{lever_id}: left out: {why}")
            else:
                levers.append(lever)
    levers.sort(key=lambda lever: lever.index)
    ids = [lever.id for lever in levers]
    for i, lever in enumerate(levers):
        for other in levers[:i]:
            shared = sorted(set(lever.arms.changes()) & set(other.arms.changes()))
            if shared:
                raise InputError(f"--run screen: {other.id} and {lever.id} both change {shared[0]}: one design "
                                 "cannot switch one key two ways; screen them apart")
    if len(levers) < MIN_LEVERS or len(levers) > MAX_LEVERS:
        got = f"{len(levers)}" + (f" ({', '.join(ids)})" if ids else "")
        why = "; ".join(left_out)
        raise InputError(f"--run screen: a screen needs {MIN_LEVERS} to {MAX_LEVERS} levers that compose on the "
                         f"stack, got {got}" + (f"; {why}" if why else "")
                         + ("" if named else "; name them: optseq --run screen LEVER LEVER …"))
    adopted = [lid for lid in seq.machine.stack_order() if lid not in ids]
    on = compose([(lid, seq.plan.lever(lid).arms if seq.plan.has_lever(lid) else None) for lid in adopted])
    return Screened(tuple(levers), tuple(left_out), on)


def _why_not(seq, lever, workload) -> str | None:
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
        seq.check_runnable(lever.id)
    except InputError as exc:
        return str(exc).removeprefix(f"{lever.id} ").removeprefix(f"{lever.id}: ")
    adopted = [(lid, seq.plan.lever(lid).arms) for lid in seq.machine.adoption_order()
               if seq.plan.has_lever(lid) and lid != lever.id]
    clash = conflict(lever.id, arms, adopted)
    if clash:
        return f"cannot join the stack: {clash}"
    return None


def budget_of(levers) -> int:
    """The launches a screen may spend unless told: what the levers' own runs could spend, one at a time (each
    pair of their rule is two launches)."""
    return sum(2 * lever.rule.max_repeats for lever in levers)
