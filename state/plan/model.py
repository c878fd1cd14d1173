"""The plan: typed classes loaded from TOML, validated with one-line errors naming file and key."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from optseq.state.plan.gates import Expr, atoms
from optseq.state.plan.runner import RunnerConfig

KINDS = ("decision", "infra", "experiment", "speedup")
"""Lever kinds, in the order `next` prefers them."""
CODE_STATUS = ("none", "merged-default-off", "enabled")
PAIRED_OUTCOMES = ("adopt", "reject", "defer")
DECISION_OUTCOMES = ("GO", "NO-GO")
TRIGGERS = ("decided", "planned", "measured")
MARKS = ("state", "code")
LANGS = ("ko", "en")
RUN_KEYWORDS = ("next", "ready", "stale", "all")
"""Words `--run` takes as targets (or may take): a lever with such an id could never be run by name."""
MAX_PLAN_BYTES = 1024 ** 2
"""A plan file larger than this is refused before it is parsed."""
MAX_PAIRS = 10_000
"""Most A/B pairs a rule may ask for (`repeats`, `max_repeats`): far beyond any decision, well below a typo."""
MAX_TIMEOUT_S = 7 * 24 * 3600
"""Longest `timeout_s`, a week; poll()'s millisecond timeout overflows past about 24.8 days."""
MAX_LEVERS = 200
"""Levers in one plan; gate chains are walked recursively, so this also bounds their depth."""
MAX_GATE_DEPTH = 16
"""How deep `requires` may nest { all = [...] } / { any = [...] } inside one another."""


class PlanError(Exception):
    """A plan that cannot be used; str() is the one line shown to the user."""

    def __init__(self, path: Path | str, key: str, problem: str):
        # keys and values come from the file: keep the error on one line whatever they hold
        self.path, self.key, self.problem = str(path), _printable(key), _printable(problem)
        super().__init__(f"{self.path}: {self.key}: {self.problem}" if key else f"{self.path}: {self.problem}")


@dataclass(frozen=True)
class Guard:
    """A quality limit a run must respect (e.g. parity mismatches ≤ 0)."""

    name: str
    max: float | None = None
    min: float | None = None


@dataclass(frozen=True)
class Rule:
    """How a lever's samples turn into a decision."""

    metric: str
    """Metric name the run reports in its `sample` events."""
    min_speedup: float = 1.0
    """Adopt when the CI's lower bound of candidate/baseline reaches this."""
    guards: tuple[Guard, ...] = ()
    repeats: int = 5
    """A/B pairs in the first pass; a launch never asks for more (the pair budget may make it ask for fewer)."""
    max_repeats: int = 20
    """Pairs the run may extend to before settling on inconclusive."""
    launches: int | None = None
    """A/B levers whose launch is the unit: launches before the first look that can decide; None = the fewest
    a 5% sign test over the launch budget can decide with (6 at the default budget)."""
    max_launches: int | None = None
    """The launch budget the error is spent over; None = 3 × launches. Never more than max_repeats."""
    pairs_per_launch: int | None = None
    """Pairs every launch asks for (within the budget), as pyperf's `--values`; None = chosen by the run from
    the variance split and the costs it measures (Kalibera & Jones), `repeats` at most."""
    choose: str | None = None
    """Experiments only: `min:METRIC` or `max:METRIC` picks the arm (config)."""
    max_cost_ratio: float | None = None
    """Experiments only: discard arms whose time metric exceeds the cheapest arm's by this factor."""
    cost_metric: str | None = None
    margin: float | None = None
    """Experiments only: the practical margin, relative (0.05 = 5%), within which a config counts as good as
    the best; None = 0, only a config shown best by the statistics wins."""


SOURCES = ("regex", "json", "file", "wall_time")
"""Where a command-pair lever's number comes from: a regex over the arm's output, a key of its last JSON line
holding that key, a key of a JSON file it writes, or its wall time."""
ARM_ORDERS = ("alternate", "random")


@dataclass(frozen=True)
class Source:
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


@dataclass(frozen=True)
class ArmGuard:
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


@dataclass(frozen=True)
class Arms:
    """A command-pair lever: optseq runs the two commands itself, interleaved, and reads the number from each."""

    baseline: tuple[str, ...]
    candidate: tuple[str, ...]
    metric: str
    source: Source
    unit: str = ""
    higher_is_better: bool = True
    baseline_env: tuple[tuple[str, str], ...] = ()
    candidate_env: tuple[tuple[str, str], ...] = ()
    """The toggles; also what an adopted lever adds to every later lever's arms (the stack)."""
    cwd: str = "."
    """Absolute: the plan file's folder unless the plan says otherwise."""
    warmup: int = 1
    """Untimed runs of each arm per pass before the pairs; their numbers are dropped."""
    order: str = "alternate"
    """alternate: ABBA (pair i starts with the candidate when i is odd); random: a seeded coin per pair."""
    guards: tuple[ArmGuard, ...] = ()

    def summary(self) -> str:
        """One line for the console and `status`: what runs, what tells the arms apart, where the number is."""
        def env(pairs) -> str:
            return " ".join(f"{k}={v}" for k, v in pairs)

        if self.baseline == self.candidate:
            arms = " ".join(self.baseline) + "; candidate adds " + env(self.candidate_env) + (
                f", baseline {env(self.baseline_env)}" if self.baseline_env else "")
        else:
            arms = f"baseline {' '.join(self.baseline)} vs candidate {' '.join(self.candidate)}"
        guards = f"; guards {', '.join(g.name for g in self.guards)}" if self.guards else ""
        return f"{arms}; {self.metric} from {self.source.text()}{guards}"

    def to_dict(self, stack_env: dict[str, str] | None = None) -> dict:
        """The spec the arms driver (`python -m optseq.engine.arms`) reads from OPTSEQ_ARMS."""
        return {"baseline": list(self.baseline), "candidate": list(self.candidate), "metric": self.metric,
                "source": self.source.to_dict(), "unit": self.unit, "higher_is_better": self.higher_is_better,
                "baseline_env": dict(self.baseline_env), "candidate_env": dict(self.candidate_env),
                "stack_env": dict(stack_env or {}), "cwd": self.cwd, "warmup": self.warmup, "order": self.order,
                "guards": [g.to_dict() for g in self.guards]}


ARMS_RUN = ("python", "-m", "optseq.engine.arms")
"""What a command-pair lever launches: optseq's own driver, which runs the two arms and speaks the protocol."""


@dataclass(frozen=True)
class Criterion:
    id: str
    title: str


@dataclass(frozen=True)
class Candidate:
    id: str
    title: str
    results: dict[str, str] = field(default_factory=dict)
    """Results known when the plan was written: criterion id -> pass | fail."""
    verdict: str | None = None
    """`fail` when the candidate failed as a whole (which criterion is not recorded)."""
    evidence: str = ""


@dataclass(frozen=True)
class Branch:
    outcome: str
    label: str
    opens: tuple[str, ...] = ()
    closes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CriteriaGate:
    """Candidates × criteria; GO when one candidate passes all, NO-GO when every candidate failed."""

    candidates: tuple[Candidate, ...]
    criteria: tuple[Criterion, ...]
    branches: tuple[Branch, ...] = ()

    def branch(self, outcome: str) -> Branch | None:
        return next((b for b in self.branches if b.outcome == outcome), None)


@dataclass(frozen=True)
class Prior:
    """A decision the plan already records (measured before optseq kept the plan)."""

    outcome: str
    note: str = ""
    estimate: float | None = None


@dataclass(frozen=True)
class Expect:
    """What the plan expects of a lever nobody has measured yet: a prior, used (and marked `prior`) until a run."""

    speedup: float | None = None
    """The speed-up on the part of an iteration the lever touches (its `share`)."""
    p_adopt: float | None = None
    """The chance it is adopted once measured."""
    note: str = ""


@dataclass(frozen=True)
class PlannedExperiment:
    """Training work the plan expects to run: `runs` × `configs` × `iterations` iterations."""

    id: str
    configs: int
    iterations: int
    runs: int
    """Times it runs in all: the first run and its re-runs."""
    title: str = ""
    lever: str | None = None
    """The experiment lever these runs are: they run at its place in an order. None: after every pending lever."""
    s_per_iter: float | None = None
    """Seconds per iteration for this experiment; None = the volume's."""
    rerun_when: tuple[str, ...] | None = None
    """Levers whose adoption after it has run forces a re-run (its numbers would come from another stack);
    None = the plan's infra levers, the seed's comparability argument."""
    assumed: tuple[str, ...] = ()
    """Which of its numbers (keys) are assumptions rather than the doc's."""
    note: str = ""


@dataclass(frozen=True)
class Volume:
    """The plan's `[volume]`: the planned experiments and the time an iteration takes."""

    experiments: tuple[PlannedExperiment, ...]
    s_per_iter: float | None = None
    """Declared seconds per training iteration; the fallback while `s_per_iter_from` has no measurement."""
    s_per_iter_from: tuple[str, str] | None = None
    """(experiment lever, metric): take the seconds per iteration from that lever's latest run."""
    assumed: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Lever:
    id: str
    title: str
    kind: str
    index: int
    """Position in the plan: the tie-breaker for `next`."""
    plan_doc: str | None = None
    plan_note: str = ""
    code: str = "none"
    requires: Expr | None = None
    run: tuple[str, ...] = ()
    timeout_s: float = 900.0
    rule: Rule | None = None
    remeasure_when: tuple[str, ...] = ()
    status: str = ""
    """The plan's own words for the current state; shown while nothing has happened since."""
    graph_label: str = ""
    criteria: CriteriaGate | None = None
    prior: Prior | None = None
    outcomes: tuple[str, ...] = ()
    """Outcomes this lever can be decided with (experiments: its config names)."""
    arms: Arms | None = None
    """A command-pair lever's two commands; its `run` is then ARMS_RUN."""
    resources: tuple[tuple[str, int], ...] = ()
    """What one run asks a cluster runner for: whole `gpus`, `cpus` (ignored by the local runner)."""
    share: float | None = None
    """Fraction of a training iteration the lever speeds up (Amdahl); None = not declared (1 is assumed)."""
    effort_h: float | None = None
    """Declared integration hours, part of its cost in the hours-saved calculus; None = not declared."""
    expect: Expect | None = None

    @property
    def needs_plan(self) -> bool:
        return self.plan_doc is None and self.code == "none"


@dataclass(frozen=True)
class Fact:
    id: str
    description: str = ""
    value: bool = False


@dataclass(frozen=True)
class OrderItem:
    title: str
    text: str = ""
    levers: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatusItem:
    lever: str
    text: str
    about: str = "state"
    """`state`: the lever's progress; `code`: whether its code is merged."""


@dataclass(frozen=True)
class DecisionPoint:
    id: str
    lever: str
    on: str
    """`decided`, `planned` or `measured`."""
    text: str
    reopens: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    path: str
    title: str
    as_of: dt.date
    lang: str
    levers: tuple[Lever, ...]
    intro: str = ""
    facts: tuple[Fact, ...] = ()
    table: tuple[str, ...] = ()
    """Lever ids of the pending-levers table, in row order."""
    order: tuple[OrderItem, ...] = ()
    status: tuple[StatusItem, ...] = ()
    decision_points: tuple[DecisionPoint, ...] = ()
    runner: RunnerConfig | None = None
    """The plan's `[runner]` table: where its levers run unless the command line says otherwise."""
    volume: Volume | None = None
    """The plan's `[volume]`: what the hours-saved calculus weighs each lever against."""

    def lever(self, lever_id: str) -> Lever:
        for lever in self.levers:
            if lever.id == lever_id:
                return lever
        raise KeyError(lever_id)

    def has_lever(self, lever_id: str) -> bool:
        return any(lever.id == lever_id for lever in self.levers)

    def fact(self, fact_id: str) -> Fact:
        for fact in self.facts:
            if fact.id == fact_id:
                return fact
        raise KeyError(fact_id)


def dependencies(lever: Lever) -> list[str]:
    return list(dict.fromkeys(a.lever for a in atoms(lever.requires) if a.lever))


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
