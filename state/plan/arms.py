"""A command-pair lever's `arms` table, and the plan's `[workload]` it changes: commands, where their number
comes from, their guards.

```toml
[workload]                                          # the one command the levers change (optional)
command = ["python", "bench.py", "--batch=8"]
cwd = "."                                           # relative to the plan file's folder
env = { OMP_NUM_THREADS = "1" }                     # both arms of every lever
metric = { name = "tokens_per_s", regex = 'tokens/s: ([0-9.]+)', unit = "tokens/s" }
guards = [{ name = "loss", regex = 'loss ([0-9.]+)', max_rel_diff = 0.01 }]

[levers.arms]
candidate_args = ["--compile=True"]                 # what the candidate adds: a flag of the same --key replaces
candidate_env = { USE_AMP = "1" }                   # the toggle (baseline_env too, if the baseline needs one)
# candidate_ref = "option-b"                        # a branch lever: the candidate is this commit's code, the
# baseline_ref = "main"                             # baseline the plan repository's HEAD unless given; each runs in
#                                                   # a worktree of its commit, after the workload's `setup` there
# without a workload, or to leave it: command = [...] (both arms), or baseline = [...] and candidate = [...]
warmup = 1            # untimed runs of each arm per pass
order = "alternate"   # ABBA; or "random" (seeded per run and pass)
```

Each key of the lever's table overrides the workload's (`metric`, `guards`, `cwd`, `warmup`, `order`,
`command`, `setup`); env is merged, the lever's on top. The workload's `setup` (argv, e.g. `["make", "native"]`)
runs once in each commit's worktree before a branch lever's or a compare's arms run there.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from optseq.state.plan.model import Guard, Rule
from optseq.state.plan.workload import (
    ARM_ORDERS, SOURCES, ArmGuard, Arms, Source, Workload, apply_args, direction_of, flag_key,
)

if TYPE_CHECKING:
    from optseq.state.plan.fields import Fields

ARMS_KEYS = {"command", "baseline", "candidate", "baseline_env", "candidate_env", "candidate_args", "metric",
             "guards", "warmup", "order", "cwd", "candidate_ref", "baseline_ref", "setup"}
WORKLOAD_KEYS = {"command", "cwd", "env", "metric", "guards", "warmup", "order", "setup"}
SOURCE_KEYS = {"regex", "json", "file", "key", "wall_time"}
BOUNDS = ("max_diff", "max_rel_diff", "max", "min")
MAX_WARMUP = 100
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_workload(fields: Fields, raw, plan_dir: Path) -> Workload:
    where = "workload"
    if not isinstance(raw, dict):
        raise fields.fail(where, f"expected a [workload] table, got {type(raw).__name__}")
    fields.check_keys(raw, WORKLOAD_KEYS, where)
    command = _argv(fields, raw, "command", where)
    if not command:
        raise fields.fail(f"{where}.command", "missing: the command every command-pair lever changes")
    metric = source = None
    unit, higher = "", None
    if "metric" in raw:
        metric, source, unit, higher = _metric(fields, raw, where, None)
    return Workload(command=command, cwd=_cwd(fields, raw, where, plan_dir), env=_env(fields, raw, "env", where),
                    metric=metric, source=source, unit=unit, higher_is_better=higher,
                    guards=_guards(fields, raw, where), warmup=_warmup(fields, raw, where, None),
                    order=_order(fields, raw, where, None), setup=_argv(fields, raw, "setup", where))


def parse_arms(fields: Fields, raw, where: str, plan_dir: Path, rule: Rule | None,
               workload: Workload | None = None) -> tuple[Arms, Rule]:
    """The lever's Arms, and its rule with the arms' guards added (a guard is judged like any quality event)."""
    if not isinstance(raw, dict):
        raise fields.fail(where, f"expected a table, got {type(raw).__name__}")
    fields.check_keys(raw, ARMS_KEYS, where)
    if rule is None:
        raise fields.fail(where.rsplit(".", 1)[0] + ".rule", "a command-pair lever needs a rule (metric, "
                                                              "min_speedup) to decide on")
    command = _argv(fields, raw, "command", where)
    baseline = _argv(fields, raw, "baseline", where)
    candidate = _argv(fields, raw, "candidate", where)
    if command and (baseline or candidate):
        raise fields.fail(f"{where}.command", "give either command (both arms, with candidate_args or "
                                              "candidate_env) or baseline and candidate, not both")
    whole = bool(baseline or candidate)
    candidate_ref, baseline_ref = _ref(fields, raw, "candidate_ref", where), _ref(fields, raw, "baseline_ref", where)
    if baseline_ref is not None and candidate_ref is None:
        raise fields.fail(f"{where}.baseline_ref", "a baseline_ref needs a candidate_ref (the commit measured "
                                                   "against it); without one both arms run here")
    if whole and candidate_ref is not None:
        raise fields.fail(f"{where}.candidate_ref", "a branch lever runs one command at two commits: give command "
                                                    "(or the workload's), not baseline and candidate")
    if whole and not (baseline and candidate):
        missing = "candidate" if baseline else "baseline"
        raise fields.fail(f"{where}.{missing}", "missing (with two whole commands, give baseline and candidate)")
    if not whole and not command:
        if workload is None:
            raise fields.fail(f"{where}.command", "missing (the command for both arms, a [workload] whose command "
                                                  "the lever changes, or baseline and candidate)")
        command = workload.command
    candidate_args = _flags(fields, raw, where)
    baseline_env = _env(fields, raw, "baseline_env", where)
    candidate_env = _env(fields, raw, "candidate_env", where)
    if whole and candidate_args:
        raise fields.fail(f"{where}.candidate_args", "the candidate is a whole command of its own: its flags go "
                                                     "in it (or give command and candidate_args)")
    if not whole and not candidate_env and not baseline_env and not candidate_args and candidate_ref is None:
        raise fields.fail(f"{where}.candidate_args", "missing: with one command for both arms, candidate_args or "
                                                     "candidate_env (or baseline_env, or candidate_ref: a branch) "
                                                     "is what tells the arms apart")
    if not whole:
        baseline, candidate = command, apply_args(command, candidate_args)
    if baseline == candidate and dict(baseline_env) == dict(candidate_env) and candidate_ref is None:
        raise fields.fail(f"{where}.candidate_args" if candidate_args else f"{where}.candidate_env",
                          "the two arms are the same command with the same environment")
    inherited = workload if workload is not None and not whole else None
    measured = inherited.measured() if inherited is not None and "metric" not in raw else None
    if measured is None:
        name, source, unit, higher = _metric(fields, raw, where, rule)
    else:
        name, source, unit, higher = measured
        if name != rule.metric:
            raise fields.fail(f"{where}.metric", f"missing: the workload's metric is {name!r}, the rule's "
                                                 f"{rule.metric!r} (give this lever its own metric table)")
    guards = _guards(fields, raw, where) if "guards" in raw or inherited is None else inherited.guards
    names = [g.name for g in guards] + [g.name for g in rule.guards]
    for g in guards:
        if names.count(g.name) > 1:
            raise fields.fail(f"{where}.guards", f"guard {g.name!r} is named twice")
    warmup = _warmup(fields, raw, where, inherited.warmup if inherited else None)
    order = _order(fields, raw, where, inherited.order if inherited else None)
    cwd = _cwd(fields, raw, where, plan_dir) if "cwd" in raw or inherited is None else inherited.cwd
    setup = _argv(fields, raw, "setup", where) if "setup" in raw or inherited is None else inherited.setup
    if "setup" in raw and candidate_ref is None:
        raise fields.fail(f"{where}.setup", "setup runs in a commit's worktree: only a branch lever (candidate_ref) "
                                            "has one (run it yourself once for the tree you work in)")
    arms = Arms(baseline=baseline, candidate=candidate, metric=name, source=source, unit=unit,
                higher_is_better=higher, baseline_env=baseline_env, candidate_env=candidate_env, cwd=cwd,
                warmup=warmup, order=order, guards=guards, candidate_args=candidate_args,
                workload_env=inherited.env if inherited else (), whole=whole, candidate_ref=candidate_ref,
                baseline_ref=baseline_ref, setup=setup if candidate_ref is not None else ())
    return arms, replace(rule, guards=rule.guards + guard_rules(guards))


def guard_rules(guards: tuple[ArmGuard, ...]) -> tuple[Guard, ...]:
    """The rule's guards for arm guards: the driver reports each as a quality event already reduced to the bound it
    names."""
    return tuple(Guard(g.name, min=g.min) if g.min is not None else Guard(g.name, max=g.limit[1]) for g in guards)


def _metric(fields: Fields, raw: dict, where: str, rule: Rule | None) -> tuple[str, Source, str, bool]:
    """name, source, unit, higher_is_better of a metric table; the direction from the unit where it is not
    declared, and never a declared direction the unit contradicts."""
    metric = fields.get(raw, "metric", where, dict, what="a table (name, a source, unit, higher_is_better)")
    mw = f"{where}.metric"
    fields.check_keys(metric, SOURCE_KEYS | {"name", "unit", "higher_is_better"}, mw)
    source = _source(fields, metric, mw)
    name = fields.get(metric, "name", mw, str, rule.metric if rule else None)
    if rule is not None and name != rule.metric:
        raise fields.fail(f"{mw}.name", f"{name!r} is not the rule's metric {rule.metric!r}")
    unit = fields.get(metric, "unit", mw, str, "s" if source.kind == "wall_time" else "")
    declared = fields.get(metric, "higher_is_better", mw, bool, None)
    implied = False if source.kind == "wall_time" else direction_of(unit)
    higher = declared if declared is not None else implied
    if higher is None:
        raise fields.fail(f"{mw}.higher_is_better", f"missing: unit {unit!r} does not say which way is better "
                                                    "(true for a rate such as samples/s, false for a time)")
    if declared is not None and implied is not None and declared != implied:
        what = "a time: lower is better" if implied is False else "a rate: higher is better"
        raise fields.fail(f"{mw}.higher_is_better", f"{str(declared).lower()} contradicts unit {unit!r} ({what})")
    return name, source, unit, higher


def _flags(fields: Fields, raw: dict, where: str) -> tuple[str, ...]:
    flags = _argv(fields, raw, "candidate_args", where)
    keys = []
    for i, flag in enumerate(flags):
        key = flag_key(flag)
        if key is None:
            raise fields.fail(f"{where}.candidate_args[{i}]", f"{flag!r} is not a flag: write a valued flag as one "
                                                             "argument, --key=value")
        if key in keys:
            raise fields.fail(f"{where}.candidate_args[{i}]", f"{key} is given twice")
        keys.append(key)
    return flags


def _guards(fields: Fields, raw: dict, where: str) -> tuple[ArmGuard, ...]:
    return tuple(_guard(fields, g, f"{where}.guards[{i}]")
                 for i, g in enumerate(fields.get(raw, "guards", where, list, [], "a list of guard tables")))


def _warmup(fields: Fields, raw: dict, where: str, inherited: int | None) -> int:
    warmup = fields.get(raw, "warmup", where, int, 1 if inherited is None else inherited)
    if not 0 <= warmup <= MAX_WARMUP:
        raise fields.fail(f"{where}.warmup", f"expected 0 to {MAX_WARMUP} runs per arm, got {warmup}")
    return warmup


def _order(fields: Fields, raw: dict, where: str, inherited: str | None) -> str:
    order = fields.get(raw, "order", where, str, inherited or "alternate")
    if order not in ARM_ORDERS:
        raise fields.fail(f"{where}.order", f"unknown order {order!r} (one of {', '.join(ARM_ORDERS)}; "
                                            "never all of one arm, then all of the other)")
    return order


def _cwd(fields: Fields, raw: dict, where: str, plan_dir: Path) -> str:
    folder = (plan_dir / fields.get(raw, "cwd", where, str, ".")).resolve()
    if not folder.is_dir():
        raise fields.fail(f"{where}.cwd", f"{str(folder)!r} is not a directory")
    return str(folder)


def _ref(fields: Fields, raw: dict, key: str, where: str) -> str | None:
    """A git ref as written (a branch, tag, commit or expression); resolved to a commit when a run starts."""
    ref = fields.get(raw, key, where, str, None)
    if ref is None:
        return None
    if not ref.strip() or ref != ref.strip() or ref.startswith("-") or any(not c.isprintable() for c in ref):
        raise fields.fail(f"{where}.{key}", f"not a git ref: {ref!r} (a branch, tag or commit, e.g. \"option-b\")")
    return ref


def _argv(fields: Fields, raw: dict, key: str, where: str) -> tuple[str, ...]:
    if key in raw and isinstance(raw[key], str):
        raise fields.fail(f"{where}.{key}", f"expected a list of strings (argv, e.g. [\"python\", \"train.py\"]), "
                                            f"got the string {raw[key]!r}")
    argv = fields.strings(raw, key, where)
    if key in raw and not argv:
        raise fields.fail(f"{where}.{key}", "empty command")
    if argv and not argv[0].strip():  # [""] names no program: refused here, not when a run is under way
        raise fields.fail(f"{where}.{key}", f"the program to run (its first word) is empty: {list(argv)!r}")
    return argv


def _env(fields: Fields, raw: dict, key: str, where: str) -> tuple[tuple[str, str], ...]:
    table = fields.get(raw, key, where, dict, {}, "a table of NAME = \"value\"")
    for name, value in table.items():
        if not ENV_NAME.fullmatch(name):
            raise fields.fail(f"{where}.{key}.{name}", "not an environment variable name")
        if name.startswith("OPTSEQ_"):
            raise fields.fail(f"{where}.{key}.{name}", "OPTSEQ_ variables are optseq's own")
        if not isinstance(value, str):
            raise fields.fail(f"{where}.{key}.{name}", f"expected a string (environment values are text), "
                                                       f"got {value!r}")
    return tuple(sorted(table.items()))


def _source(fields: Fields, table: dict, where: str) -> Source:
    given = [k for k in ("regex", "json", "file", "wall_time") if k in table]
    if len(given) != 1:
        raise fields.fail(where, f"expected one source of {', '.join(SOURCES)}, got "
                                 f"{', '.join(given) if given else 'none'}")
    kind = given[0]
    if kind != "file" and "key" in table:
        raise fields.fail(f"{where}.key", "only a file source has a key (json = \"KEY\" names its own)")
    if kind == "regex":
        pattern = fields.get(table, "regex", where, str)
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise fields.fail(f"{where}.regex", f"not a regular expression: {exc}") from None
        if compiled.groups < 1:
            raise fields.fail(f"{where}.regex", f"{pattern!r} has no group: put the number in ( )")
        if compiled.groups > 1 and "value" not in compiled.groupindex:
            raise fields.fail(f"{where}.regex", f"{pattern!r} has {compiled.groups} groups: name the number's "
                                                "(?P<value>...)")
        return Source("regex", pattern=pattern)
    if kind == "json":
        return Source("json", key=_key(fields, fields.get(table, "json", where, str), f"{where}.json"))
    if kind == "file":
        path = fields.get(table, "file", where, str)
        if not path.strip():
            raise fields.fail(f"{where}.file", "empty path")
        return Source("file", path=path, key=_key(fields, fields.get(table, "key", where, str), f"{where}.key"))
    if fields.get(table, "wall_time", where, bool) is not True:
        raise fields.fail(f"{where}.wall_time", "wall_time = true, or leave it out")
    return Source("wall_time")


def _key(fields: Fields, key: str, where: str) -> str:
    if not key or any(not part for part in key.split(".")):
        raise fields.fail(where, f"not a key: {key!r} (dots for nesting, e.g. metrics.samples_per_s)")
    return key


def _guard(fields: Fields, raw, where: str) -> ArmGuard:
    if not isinstance(raw, dict):
        raise fields.fail(where, f"expected a table, got {type(raw).__name__}")
    fields.check_keys(raw, SOURCE_KEYS | {"name", *BOUNDS}, where)
    name = fields.get(raw, "name", where, str)
    source = _source(fields, raw, where)
    bounds = {k: fields.get(raw, k, where, (int, float)) for k in BOUNDS if k in raw}
    if len(bounds) != 1:
        raise fields.fail(where, f"expected one bound of {', '.join(BOUNDS)}, got "
                                 f"{', '.join(bounds) if bounds else 'none'}")
    (kind, value), = bounds.items()
    if kind in ("max_diff", "max_rel_diff") and value < 0:
        raise fields.fail(f"{where}.{kind}", f"a difference bound is never negative, got {value}")
    return ArmGuard(name, source, **{kind: float(value)})
