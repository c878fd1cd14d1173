"""A screen's record as types: the `screen` part of a run of kind `screen` (`optseq --run screen`), and the summary
`--run screen --json` prints of it, decoded once into frozen msgspec Structs that the views, the console and the
benches read by attribute.

The run (state/runs/screen_run.py, screen_finish.py) writes the part from the screen's own classes' to_dict
(state/screen/: Design, Fit, Effect, LeverCall, ScreenStep); this is the readers' view of what it wrote, one floor
below lifecycle/ so that every room and the console (through state/api.py) read the same types:

- a field that an older screen's record lacks (added since: an effect's aliases and standard error, a call's
  blocks-to-settle, a fit's stalls, the screen's verdicts and budget) reads as its default, and a part a view hands
  out whole (an effect, a call, a confirmation) is `UNSET` where absent, so encoding it back (`builtins`) gives the
  stored object key for key, in the order the writer wrote them;
- keys a reader does not name are not kept: the stored record keeps them;
- a part in a shape no writer ever stored (a hand-edited store) reads as an empty screen, as `.get` read it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from optseq.state.kinds import RunStatus, ScreenVerdict


class Effect(msgspec.Struct, frozen=True):
    """A main effect (`amp`) or an interaction (`amp×compile`) as a ratio with its 95% interval (analysis.Effect)."""
    name: str = ""
    levers: list[str] = []
    ratio: float = float("nan")
    low: float | None = None
    high: float | None = None
    aliases: list[str] | UnsetType = UNSET
    log_se: float | UnsetType = UNSET
    df: int | UnsetType = UNSET

    @property
    def pair(self) -> tuple[str, ...]:
        """Its levers, from its name where an older record lacks them."""
        return tuple(self.levers or self.name.split("×"))


class Fit(msgspec.Struct, frozen=True):
    """Every estimable effect of the blocks done (analysis.Fit)."""
    mains: list[Effect] = []
    interactions: list[Effect] = []
    blocks: int | None = None
    runs: int | None = None
    residual_df: int | None = None
    sigma: float | None = None
    downweighted: int | UnsetType = UNSET


class Call(msgspec.Struct, frozen=True):
    """A lever's call at a look (screen_passes.LeverCall); `why`, in `--run screen --json` alone, the reason its
    verdict was reached at the screen's end."""
    lever: str = ""
    outcome: str | None = None
    reason: str | None = None
    low: float | None = None
    high: float | None = None
    more_blocks: int | None | UnsetType = UNSET
    why: str | None | UnsetType = UNSET


class Step(msgspec.Struct, frozen=True):
    """The last look (screen_passes.ScreenStep): its fit, each lever's call, the significant interactions."""
    more: int = 0
    fit: Fit | None = None
    calls: dict[str, Call] = {}
    interactions: list[Effect] = []
    said: list[str] = []
    confirm: list[str] = []
    note: str | None = None


class Confirmed(msgspec.Struct, frozen=True):
    """The paired confirmation of the combination a screen held (screen_finish.confirm), a run of its own."""
    levers: list[str] = []
    run: int | None = None
    outcome: str | None = None
    reason: str | None | UnsetType = UNSET
    status: str | None | UnsetType = UNSET
    commit: str | UnsetType = UNSET  # a screen of branch levers: the combination's commit


class Design(msgspec.Struct, frozen=True):
    """The two-level design (design.Design.to_dict): its factors, runs (±1 per factor) and generators."""
    factors: list[str] = []
    runs: list[list[int]] = []
    generators: list[str] = []
    resolution: int | None = None
    fold: str | UnsetType = UNSET
    fold_block: int | UnsetType = UNSET


class Part(msgspec.Struct, frozen=True):
    """A screen run's `screen`: its levers, design, seed, blocks (each one's run order), launches and budget, the
    last look, the confirmation, and at its end each lever's verdict and why."""
    levers: list[str] = []
    design: Design | None = None
    seed: int | None = None
    blocks: list[list[int]] = []
    budget: int | None = None
    launches: int | None = None
    step: Step | None = None
    confirmed: Confirmed | None = None
    rules: dict[str, float] = {}
    left_out: list[str] = []
    verdicts: dict[str, ScreenVerdict] = {}
    whys: dict[str, str] = {}
    spent: bool = False

    @property
    def fit(self) -> Fit:
        """The last look's fit; an empty one before any."""
        return self.step.fit if self.step is not None and self.step.fit is not None else Fit()


class ScreenRun(msgspec.Struct, frozen=True):
    """A screen's run record as the run index keeps it (lifecycle/run_index.py's KEPT fields beside these)."""
    id: int | None = None
    status: RunStatus | None = None
    screen: Part = msgspec.field(default_factory=Part)
    samples_file: str | None = None


class Report(msgspec.Struct, frozen=True):
    """A screen's `--run screen --json` run (screen_finish.ScreenReport.to_dict()), as the benches read it back."""
    run_id: int | None = None
    status: str = ""
    message: str = ""
    design: str = ""
    blocks: list[list[int]] = []
    calls: dict[str, Call] = {}
    said: list[str] = []
    decisions: dict[str, str] = {}
    confirmed: Confirmed | None = None
    launches: int = 0
    fit: Fit | None = None


class Sample(msgspec.Struct, frozen=True):
    """A design run's sample, as the samples file and the progress events carry it: `arm` run-<index> into the
    design's runs."""
    event: str = ""
    arm: str = ""
    value: float | None = None
    block: int | None = None
    metric: str | None = None

    @property
    def index(self) -> int | None:
        """The design run's index, None where the arm is not a design run's (an event's `run` is its pass)."""
        index = self.arm.removeprefix("run-")
        return int(index) if self.arm.startswith("run-") and index.isdigit() else None


class Quality(msgspec.Struct, frozen=True):
    """A guard's quality event from a design run (`name` GUARD@run-<index>): its value against its limit, a floor
    where `bound` is min, else a ceiling."""
    name: str = ""
    value: float | None = None
    limit: float | None = None
    bound: str | None = None


def screen_run(record: Mapping[str, Any] | ScreenRun) -> ScreenRun:
    """A kept screen record as its type: itself where decoded already; one whose `screen` part holds a shape no
    writer stored reads with an empty part (its id and status stand)."""
    if isinstance(record, ScreenRun):
        return record
    try:
        return msgspec.convert(record, ScreenRun)
    except msgspec.ValidationError:
        return msgspec.convert({k: v for k, v in record.items() if k != "screen"}, ScreenRun)


def part(found: object) -> Part | None:
    """A run's stored `screen` as its type: None where the run has none; one in a shape no writer stored reads as
    an empty part."""
    if not isinstance(found, Mapping):
        return None
    try:
        return msgspec.convert(found, Part)
    except msgspec.ValidationError:
        return Part()


def report(found: object) -> Report:
    """A `--run screen --json` run as its type; msgspec.ValidationError (naming the field) where it is not one."""
    return msgspec.convert(found, Report)


def samples(events: list[Any]) -> list[Sample]:
    """The samples among events (each a dict), in order, as their type; one of another shape left out."""
    found = []
    for event in events:
        try:
            found.append(msgspec.convert(event, Sample))
        except msgspec.ValidationError:
            continue
    return found


def qualities(events: list[Any]) -> list[Quality]:
    """The quality events among events (each a dict), in order, as their type; one of another shape left out (a
    value that is no number judges nothing)."""
    found = []
    for event in events:
        try:
            found.append(msgspec.convert(event, Quality))
        except msgspec.ValidationError:
            continue
    return found


def builtins(value: msgspec.Struct) -> dict[str, Any]:
    """A part handed out whole (status --json), as the store holds it: the fields it has, in the writer's order."""
    out: dict[str, Any] = msgspec.to_builtins(value)
    return out


__all__ = ["UNSET", "Effect", "Fit", "Call", "Step", "Confirmed", "Design", "Part", "ScreenRun", "Report", "Sample",
           "Quality", "screen_run", "part", "report", "samples", "qualities", "builtins"]
