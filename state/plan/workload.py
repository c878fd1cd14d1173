"""What a command-pair lever runs: the plan's workload (one command, its cwd, env, metric and guards) and each
lever as a change to it (flags and environment), composed in adoption order into the stack every later lever's
two arms carry."""
from __future__ import annotations

import msgspec

SOURCES = ("regex", "json", "file", "wall_time")
"""Where a command-pair lever's number comes from: a regex over the arm's output, a key of its last JSON line
holding that key, a key of a JSON file it writes, or its wall time."""
ARM_ORDERS = ("alternate", "random")


class Source(msgspec.Struct, frozen=True):
    """Where one number comes from in one arm's run."""

    kind: str
    """One of SOURCES."""
    pattern: str = ""
    """regex: the first group (or the group named `value`) of the last match in the output."""
    key: str = ""
    """json / file: a key, dots for nesting (`metrics.samples_per_s`)."""
    path: str = ""
    """file: relative to the arm's cwd; it must be written during the arm's run."""

    def text(self) -> str:
        return {"regex": f"regex {self.pattern!r}", "json": f"JSON key {self.key!r}",
                "file": f"key {self.key!r} of {self.path}", "wall_time": "wall time"}[self.kind]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "pattern": self.pattern, "key": self.key, "path": self.path}


class ArmGuard(msgspec.Struct, frozen=True):
    """A quality number read from both arms, with a bound on the candidate or on the difference."""

    name: str
    source: Source
    max_diff: float | None = None
    """Largest |candidate - baseline| over the pairs."""
    max_rel_diff: float | None = None
    """Largest |candidate - baseline| / |baseline| over the pairs."""
    max: float | None = None
    """Largest candidate value."""
    min: float | None = None
    """Smallest candidate value."""

    @property
    def limit(self) -> tuple[str, float]:
        return next((k, v) for k in ("max_diff", "max_rel_diff", "max", "min") if (v := getattr(self, k)) is not None)

    def to_dict(self) -> dict:
        kind, value = self.limit
        return {"name": self.name, "source": self.source.to_dict(), "bound": kind, "limit": value}


class Arms(msgspec.Struct, frozen=True):
    """A command-pair lever: optseq runs the two arms itself, interleaved, and reads the number from each.

    Written as a change to one command (the plan's workload's, or its own `command`): `candidate_args` and
    `candidate_env` are what the candidate adds, and once the lever is adopted, what every later lever's two
    arms carry (the stack). Written as two whole commands (`baseline`, `candidate`), nothing of it can join the
    stack: there is no third command the two compose into.
    """

    baseline: tuple[str, ...]
    """The command both arms start from (the workload's or the lever's), or the whole baseline command."""
    candidate: tuple[str, ...]
    """The candidate's command as written: the baseline with candidate_args, or the whole candidate command."""
    metric: str
    source: Source
    unit: str = ""
    higher_is_better: bool = True
    baseline_env: tuple[tuple[str, str], ...] = ()
    candidate_env: tuple[tuple[str, str], ...] = ()
    """The toggles; with candidate_args, what an adopted lever adds to every later lever's arms (the stack)."""
    cwd: str = "."
    """Absolute: the plan file's folder unless the plan says otherwise."""
    warmup: int = 1
    """Untimed runs of each arm per pass before the pairs; their numbers are dropped."""
    order: str = "alternate"
    """alternate: ABBA (pair i starts with the candidate when i is odd); random: a seeded coin per pair."""
    guards: tuple[ArmGuard, ...] = ()
    candidate_args: tuple[str, ...] = ()
    """Flags the candidate adds to the command; one with the same --key replaces the command's own."""
    workload_env: tuple[tuple[str, str], ...] = ()
    """The workload's environment: both arms run with it, under the lever's own."""
    whole: bool = False
    """baseline and candidate are two whole commands: the lever can be measured, not composed."""
    candidate_ref: str | None = None
    """A branch lever: the candidate runs the command at this ref's commit (resolved when a run starts), in a
    worktree of its own; its change is that code, which joins the stack once the commit is merged."""
    baseline_ref: str | None = None
    """The baseline's ref; None = the plan repository's HEAD."""
    setup: tuple[str, ...] = ()
    """Run once in each commit's worktree before the arms run there (the workload's, unless the lever says)."""

    @property
    def branch(self) -> bool:
        """Whether the candidate is another commit's code (a branch lever)."""
        return self.candidate_ref is not None

    @property
    def composes(self) -> bool:
        """Whether, adopted, the lever joins the stack (its change reaches every later lever's arms)."""
        return not self.whole

    def changes(self) -> dict[str, str]:
        """What the lever changes, key by key: `--flag` -> the flag as written, `$NAME` -> its value."""
        found = {flag_key(flag) or flag: flag for flag in self.candidate_args}
        found.update({f"${name}": value for name, value in self.candidate_env})
        return found

    def summary(self) -> str:
        """One line for the console and `status`: what runs, what tells the arms apart, where the number is."""
        def env(pairs) -> str:
            return " ".join(f"{k}={v}" for k, v in pairs)

        if not self.whole:
            adds = " ".join([*self.candidate_args, *(f"{k}={v}" for k, v in self.candidate_env)])
            if self.branch:
                adds = f"the code of {self.candidate_ref} (vs {self.baseline_ref or 'HEAD'})" + (
                    f" and {adds}" if adds else "")
            arms = " ".join(self.baseline) + "; candidate adds " + adds + (
                f", baseline {env(self.baseline_env)}" if self.baseline_env else "")
        else:
            arms = (f"baseline {' '.join(self.baseline)} vs candidate {' '.join(self.candidate)} (two commands: "
                    "adopted, it cannot join the stack)")
        guards = f"; guards {', '.join(g.name for g in self.guards)}" if self.guards else ""
        return f"{arms}; {self.metric} from {self.source.text()}{guards}"

    def to_dict(self, stack: "Stack | None" = None) -> dict:
        """The spec the arms driver (`python -m optseq.engine.arms`) reads from OPTSEQ_ARMS: both arms' commands
        and environments on the current stack, the lever's own change on top of it in the candidate."""
        stack = stack or Stack()
        if self.whole:
            base, cand = self.baseline, self.candidate  # the stack's flags cannot reach another command
        else:
            base = apply_args(self.baseline, stack.args)
            cand = apply_args(base, self.candidate_args)
        return {"baseline": list(base), "candidate": list(cand), "metric": self.metric,
                "source": self.source.to_dict(), "unit": self.unit, "higher_is_better": self.higher_is_better,
                "baseline_env": dict(self.baseline_env), "candidate_env": dict(self.candidate_env),
                "stack_env": {**dict(self.workload_env), **dict(stack.env)}, "stack": stack.to_dict(),
                "cwd": self.cwd, "warmup": self.warmup, "order": self.order,
                "guards": [g.to_dict() for g in self.guards]}


class Workload(msgspec.Struct, frozen=True):
    """The plan's `[workload]`: the one command every command-pair lever changes, and how it is measured."""

    command: tuple[str, ...]
    cwd: str
    """Absolute."""
    env: tuple[tuple[str, str], ...] = ()
    metric: str | None = None
    source: Source | None = None
    unit: str = ""
    higher_is_better: bool | None = None
    guards: tuple[ArmGuard, ...] = ()
    warmup: int | None = None
    order: str | None = None
    setup: tuple[str, ...] = ()
    """Run once in each commit's worktree (a branch lever's, a compare's) before the command runs there."""

    def measured(self) -> tuple[str, Source, str, bool] | None:
        """(metric, source, unit, higher_is_better) where the workload declares its metric: the four come together."""
        if self.metric is None or self.source is None or self.higher_is_better is None:
            return None
        return self.metric, self.source, self.unit, self.higher_is_better


class Stack(msgspec.Struct, frozen=True):
    """The adopted levers' changes in adoption order: what both arms of the next lever run with."""

    levers: tuple[str, ...] = ()
    """The adopted levers whose changes it holds."""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    outside: tuple[str, ...] = ()
    """Adopted levers written as two whole commands: measured on the stack, never part of it."""
    unmerged: tuple[str, ...] = ()
    """Adopted branch levers whose commit is not merged yet: not in the stack until it is."""

    def to_dict(self) -> dict:
        found = {"levers": list(self.levers), "args": list(self.args), "env": dict(self.env),
                 "outside": list(self.outside)}
        if self.unmerged:
            found["unmerged"] = list(self.unmerged)
        return found


def compose(adopted: list[tuple[str, "Arms | None"]]) -> Stack:
    """The stack of these adopted levers, in adoption order; a later change of one key replaces an earlier one
    (the adopt refuses two adopted levers that set one key differently, so that only happens on purpose)."""
    levers: list[str] = []
    outside: list[str] = []
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    for lever_id, arms in adopted:
        if arms is None:
            continue  # a protocol lever reaches later runs through OPTSEQ_INFRA
        if arms.whole:
            outside.append(lever_id)
            continue
        levers.append(lever_id)
        args = apply_args(args, arms.candidate_args)
        env.update(dict(arms.candidate_env))
    return Stack(tuple(levers), tuple(args), tuple(sorted(env.items())), tuple(outside))


def conflict(lever_id: str, arms: "Arms", adopted: list[tuple[str, "Arms | None"]]) -> str | None:
    """Why adopting `lever_id` would put two values of one key in the stack (naming the lever holding the other),
    or None."""
    mine = arms.changes()
    for other_id, other in adopted:
        if other_id == lever_id or other is None or other.whole:
            continue
        for key, value in other.changes().items():
            if key in mine and mine[key] != value:
                shown = (lambda v: v if not key.startswith("$") else f"{key[1:]}={v}")
                return (f"adopting {lever_id} would set {shown(mine[key])} in the stack, but {other_id} (adopted) "
                        f"set {shown(value)}: the stack cannot hold both; decide {other_id} again (reject or "
                        f"defer) first, or change one of them")
    return None


def flag_key(token: str) -> str | None:
    """`--batch=8` -> `--batch`; `--compile` -> `--compile`; a positional argument has no key."""
    if not token.startswith("-") or token in ("-", "--"):
        return None
    return token.split("=", 1)[0]


def apply_args(argv, flags) -> tuple[str, ...]:
    """`argv` with each flag added: one whose --key the command already has replaces it (`--key=value`, or a
    `--key value` pair), any other is appended."""
    out = list(argv)
    for flag in flags:
        key = flag_key(flag)
        at = next((i for i, token in enumerate(out) if key is not None and flag_key(token) == key), None)
        if at is None:
            out.append(flag)
            continue
        takes_next = "=" not in out[at] and at + 1 < len(out) and flag_key(out[at + 1]) is None and "=" in flag
        out[at:at + 1 + takes_next] = [flag]
    return tuple(out)


TIME_UNITS = {"s", "sec", "secs", "second", "seconds", "ms", "msec", "millisecond", "milliseconds", "us", "µs",
              "μs", "usec", "microsecond", "microseconds", "ns", "nsec", "nanosecond", "nanoseconds", "min", "mins",
              "minute", "minutes", "h", "hr", "hrs", "hour", "hours"}
"""A metric in these (or per something, `ms/step`) is a time: lower is better."""


def direction_of(unit: str) -> bool | None:
    """higher_is_better as the unit says it: a time is lower-is-better, a rate (`…/s`, `per_s`) higher; None when
    the unit says neither (a count, a score)."""
    text = unit.strip().lower()
    if not text:
        return None
    head, slash, rest = text.partition("/")
    if text in TIME_UNITS or (slash and head in TIME_UNITS):
        return False
    if (slash and rest in TIME_UNITS) or text.endswith(("per_s", "per_sec", "per second", "per_second", "/s")):
        return True
    return None


ARMS_RUN = ("python", "-m", "optseq.engine.arms")
"""What a command-pair lever launches: optseq's own driver, which runs the two arms and speaks the protocol."""


