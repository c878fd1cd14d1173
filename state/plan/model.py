"""The plan: typed classes loaded from TOML, validated with one-line errors naming file and key.

The classes are frozen msgspec Structs, not dataclasses: a Struct class is made in C when the module loads, where
the plan's 26 frozen dataclasses generated and compiled their methods at every start (a fifth of `status`).
Change one with `msgspec.structs.replace`."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec

from optseq.state.plan.compare import CompareSettings
from optseq.state.plan.testbed import TestbedSettings
from optseq.state.plan.gates import Expr, atoms
from optseq.state.plan.runner import RunnerConfig
from optseq.state.plan.workload import Arms, Workload

KINDS = ("decision", "infra", "experiment", "speedup")
"""Lever kinds, in the order `next` prefers them."""
CODE_STATUS = ("none", "merged-default-off", "enabled")
PAIRED_OUTCOMES = ("adopt", "reject", "defer")
DECISION_OUTCOMES = ("GO", "NO-GO")
TRIGGERS = ("decided", "planned", "measured")
MARKS = ("state", "code")
LANGS = ("ko", "en")
CODE_CHANGES = ("warn", "stale")
"""What a change of the workload's code (its git HEAD or uncommitted diff) since a run does to that run's numbers."""
RUN_KEYWORDS = ("next", "ready", "stale", "all", "screen")
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

    def __init__(self, path: Path | str, key: str, problem: str, line: int | None = None):
        # keys and values come from the file: keep the error on one line whatever they hold
        self.path, self.key, self.problem = str(path), _printable(key), _printable(problem)
        self.line = line
        """Where the key is written (the loader finds it in the text), when it is."""
        at = f" (line {line})" if line else ""
        super().__init__(f"{self.path}: {self.key}: {self.problem}{at}" if key else f"{self.path}: {self.problem}{at}")


class Guard(msgspec.Struct, frozen=True):
    """A quality limit a run must respect (e.g. parity mismatches ≤ 0)."""

    name: str
    max: float | None = None
    min: float | None = None


class Rule(msgspec.Struct, frozen=True):
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


class Criterion(msgspec.Struct, frozen=True):
    id: str
    title: str


class Candidate(msgspec.Struct, frozen=True):
    id: str
    title: str
    results: dict[str, str] = msgspec.field(default_factory=dict)
    """Results known when the plan was written: criterion id -> pass | fail."""
    verdict: str | None = None
    """`fail` when the candidate failed as a whole (which criterion is not recorded)."""
    evidence: str = ""


class Branch(msgspec.Struct, frozen=True):
    outcome: str
    label: str
    opens: tuple[str, ...] = ()
    closes: tuple[str, ...] = ()


class CriteriaGate(msgspec.Struct, frozen=True):
    """Candidates × criteria; GO when one candidate passes all, NO-GO when every candidate failed."""

    candidates: tuple[Candidate, ...]
    criteria: tuple[Criterion, ...]
    branches: tuple[Branch, ...] = ()

    def branch(self, outcome: str) -> Branch | None:
        return next((b for b in self.branches if b.outcome == outcome), None)


class Prior(msgspec.Struct, frozen=True):
    """A decision the plan already records (measured before optseq kept the plan)."""

    outcome: str
    note: str = ""
    estimate: float | None = None


class Expect(msgspec.Struct, frozen=True):
    """What the plan expects of a lever nobody has measured yet: a prior, used (and marked `prior`) until a run."""

    speedup: float | None = None
    """The speed-up on the part of an iteration the lever touches (its `share`)."""
    p_adopt: float | None = None
    """The chance it is adopted once measured."""
    note: str = ""


class PlannedExperiment(msgspec.Struct, frozen=True):
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


class Volume(msgspec.Struct, frozen=True):
    """The plan's `[volume]`: the planned experiments and the time an iteration takes."""

    experiments: tuple[PlannedExperiment, ...]
    s_per_iter: float | None = None
    """Declared seconds per training iteration; the fallback while `s_per_iter_from` has no measurement."""
    s_per_iter_from: tuple[str, str] | None = None
    """(experiment lever, metric): take the seconds per iteration from that lever's latest run."""
    assumed: tuple[str, ...] = ()
    note: str = ""


class Lever(msgspec.Struct, frozen=True):
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
    code_declared: bool = True
    """Whether the plan wrote `code`: a command-pair lever's default says nothing the user wrote, so no view shows it."""

    @property
    def needs_plan(self) -> bool:
        """No plan doc and no code: a branch lever's code is its branch, which is its plan."""
        return self.plan_doc is None and self.code == "none" and not (self.arms is not None and self.arms.branch)


class Fact(msgspec.Struct, frozen=True):
    id: str
    description: str = ""
    value: bool = False


class OrderItem(msgspec.Struct, frozen=True):
    title: str
    text: str = ""
    levers: tuple[str, ...] = ()
    now: str = ""
    """What the title adds while its levers are undecided (the seed's `지금 진행 중`): the doc drops it once they are
    decided, where `(in progress now) ✅` said two things at once."""


class StatusItem(msgspec.Struct, frozen=True):
    lever: str
    text: str
    about: str = "state"
    """`state`: the lever's progress; `code`: whether its code is merged."""


class DecisionPoint(msgspec.Struct, frozen=True):
    id: str
    lever: str
    on: str
    """`decided`, `planned` or `measured`."""
    text: str
    reopens: tuple[str, ...] = ()


class Plan(msgspec.Struct, frozen=True):
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
    workload: Workload | None = None
    """The plan's `[workload]`: the command its command-pair levers change, and how it is measured."""
    code_changes: str = "warn"
    """`[plan] code_changes`: "warn" shows a code change since a lever's run in status; "stale" re-queues it."""
    compare: CompareSettings = msgspec.field(default_factory=CompareSettings)
    """The plan's `[compare]`: the commit gate's tolerance and budget."""
    testbed: TestbedSettings = msgspec.field(default_factory=TestbedSettings)
    """The plan's `[testbed]`: this checkout's testbed name and the testbed whose numbers decide."""

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
