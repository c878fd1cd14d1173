"""The plan's planned volume and each lever's part in it: what the hours-saved calculus (state/calculus/) weighs.

```toml
[volume]
s_per_iter = 30.0                           # seconds per training iteration, declared
s_per_iter_from = "model_size:s_per_iter"   # or measured: that experiment's latest run (the declared value until then)
assumed = ["s_per_iter"]                    # which of these numbers are assumptions, not the doc's

[[volume.experiments]]
id = "model_size"
lever = "model_size"   # the experiment lever these runs are: they run at its place in an order (none: after every lever)
configs = 4
iterations = 200
runs = 3               # in all: the first run and its re-runs
assumed = ["runs"]
rerun_when = ["option_b"]   # levers whose adoption after it forces a re-run (default: the plan's infra levers)

[[levers]]
share = 0.8            # fraction of an iteration the lever speeds up (Amdahl; default 1, the whole iteration)
effort_h = 16          # integration hours, part of its cost
expect = { speedup = 1.3, p_adopt = 0.5, note = "seed: 인프라 1.3×" }   # a prior, until a run measures it
```
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from optseq.state.plan.model import Expect, PlannedExperiment, Volume

if TYPE_CHECKING:
    from optseq.state.plan.fields import Fields

LEVER_KEYS = {"share", "effort_h", "expect"}
"""Keys a `[[levers]]` table may carry for the calculus."""
SPEEDUP_KINDS = ("speedup", "infra")
"""Kinds that make an iteration faster; decision and experiment levers save no time themselves."""
VOLUME_KEYS = {"s_per_iter", "s_per_iter_from", "assumed", "note", "experiments"}
EXPERIMENT_KEYS = {"id", "title", "lever", "configs", "iterations", "runs", "s_per_iter", "rerun_when", "assumed",
                   "note"}
EXPERIMENT_NUMBERS = ("configs", "iterations", "runs", "s_per_iter")
MAX_COUNT = 1_000_000
"""Most configs, iterations or runs one planned experiment may declare: far beyond a plan, well below a typo."""
MAX_S_PER_ITER = 7 * 24 * 3600
MAX_EFFORT_H = 100_000
MAX_EXPERIMENTS = 100


def parse_lever_hours(fields: Fields, raw: dict, where: str, kind: str) -> dict:
    """A lever's `share`, `effort_h` and `expect`, as Lever fields (None where not declared)."""
    for key in sorted(LEVER_KEYS & set(raw)):
        if kind not in SPEEDUP_KINDS:
            raise fields.fail(f"{where}.{key}", f"only speedup and infra levers speed up an iteration (kind is "
                                                f"{kind})")
    share = fields.positive(raw, "share", where, (int, float), None)
    if share is not None and share > 1:
        raise fields.fail(f"{where}.share", f"a fraction of an iteration, at most 1, got {share}")
    effort = fields.get(raw, "effort_h", where, (int, float), None)
    if effort is not None and not 0 <= effort <= MAX_EFFORT_H:
        raise fields.fail(f"{where}.effort_h", f"expected 0 to {MAX_EFFORT_H:,} hours, got {effort}")
    expect = None
    if "expect" in raw:
        ew = f"{where}.expect"
        table = fields.get(raw, "expect", where, dict, what="a table { speedup, p_adopt, note }")
        fields.check_keys(table, {"speedup", "p_adopt", "note"}, ew)
        speedup = fields.positive(table, "speedup", ew, (int, float), None)
        p_adopt = fields.get(table, "p_adopt", ew, (int, float), None)
        if p_adopt is not None and not 0 <= p_adopt <= 1:
            raise fields.fail(f"{ew}.p_adopt", f"a probability, 0 to 1, got {p_adopt}")
        if speedup is None and p_adopt is None:
            raise fields.fail(ew, "give speedup, p_adopt or both (an empty prior says nothing)")
        expect = Expect(None if speedup is None else float(speedup), None if p_adopt is None else float(p_adopt),
                        fields.text(table, "note", ew, ""))
    return {"share": None if share is None else float(share), "effort_h": None if effort is None else float(effort),
            "expect": expect}


def parse_volume(fields: Fields, raw) -> Volume:
    if not isinstance(raw, dict):
        raise fields.fail("volume", f"expected a [volume] table, got {type(raw).__name__}")
    fields.check_keys(raw, VOLUME_KEYS, "volume")
    source = fields.get(raw, "s_per_iter_from", "volume", str, None)
    from_ = None
    if source is not None:
        lever, sep, metric = source.partition(":")
        if not sep or not lever or not metric:
            raise fields.fail("volume.s_per_iter_from", f"expected 'LEVER:METRIC' (an experiment lever and its time "
                                                        f"metric), got {source!r}")
        from_ = (lever, metric)
    items = fields.get(raw, "experiments", "volume", list, [], "a list of [[volume.experiments]] tables")
    if not items:
        raise fields.fail("volume.experiments", "the volume declares no planned experiments")
    if len(items) > MAX_EXPERIMENTS:
        raise fields.fail("volume.experiments", f"at most {MAX_EXPERIMENTS} planned experiments, got {len(items)}")
    experiments = tuple(_experiment(fields, item, i) for i, item in enumerate(items))
    seen: set[str] = set()
    for e in experiments:
        if e.id in seen:
            raise fields.fail(f"volume.experiments.{e.id}", "duplicate planned experiment id")
        seen.add(e.id)
    return Volume(experiments=experiments, s_per_iter=_seconds(fields, raw, "volume"), s_per_iter_from=from_,
                  assumed=_assumed(fields, raw, "volume", ("s_per_iter",)),
                  note=fields.text(raw, "note", "volume", ""))


def _experiment(fields: Fields, raw, i: int) -> PlannedExperiment:
    if not isinstance(raw, dict):
        raise fields.fail(f"volume.experiments[{i}]", f"expected a table, got {type(raw).__name__}")
    ident = fields.get(raw, "id", f"volume.experiments[{i}]", str)
    if not ident or not all(c.isalnum() or c in "_-" for c in ident):
        raise fields.fail(f"volume.experiments[{i}].id", f"not a valid id: {ident!r} (letters, digits, _ and -)")
    where = f"volume.experiments.{ident}"
    fields.check_keys(raw, EXPERIMENT_KEYS, where)
    counts = {key: fields.at_most(fields.positive(raw, key, where, int, ...), MAX_COUNT, f"{where}.{key}", key)
              for key in ("configs", "iterations", "runs")}
    rerun = fields.strings(raw, "rerun_when", where) if "rerun_when" in raw else None
    return PlannedExperiment(id=ident, title=fields.text(raw, "title", where, ""),
                             lever=fields.get(raw, "lever", where, str, None), s_per_iter=_seconds(fields, raw, where),
                             rerun_when=rerun, assumed=_assumed(fields, raw, where, EXPERIMENT_NUMBERS),
                             note=fields.text(raw, "note", where, ""), **counts)


def _seconds(fields: Fields, raw: dict, where: str) -> float | None:
    value = fields.positive(raw, "s_per_iter", where, (int, float), None)
    return None if value is None else float(fields.at_most(value, MAX_S_PER_ITER, f"{where}.s_per_iter",
                                                           "seconds (7 days)"))


def _assumed(fields: Fields, raw: dict, where: str, numbers: tuple[str, ...]) -> tuple[str, ...]:
    names = fields.strings(raw, "assumed", where)
    for i, name in enumerate(names):
        if name not in numbers:
            raise fields.fail(f"{where}.assumed[{i}]", f"{name!r} is not one of its numbers ({', '.join(numbers)})")
        if name not in raw:
            raise fields.fail(f"{where}.assumed[{i}]", f"{name!r} is marked assumed but not declared here")
    return names


def check_volume(fields: Fields, plan) -> None:
    """References from the volume to the plan's levers; run once the levers are known."""
    volume = plan.volume
    if volume is None:
        return

    def lever_of(lever_id: str, key: str, kinds: tuple[str, ...]):
        if not plan.has_lever(lever_id):
            raise fields.fail(key, f"unknown lever {lever_id!r}")
        lever = plan.lever(lever_id)
        if lever.kind not in kinds:
            raise fields.fail(key, f"{lever_id} is a {lever.kind} lever; expected {' or '.join(kinds)}")
        return lever

    if volume.s_per_iter_from:
        lever_of(volume.s_per_iter_from[0], "volume.s_per_iter_from", ("experiment",))
    for e in volume.experiments:
        where = f"volume.experiments.{e.id}"
        if e.lever is not None:
            lever_of(e.lever, f"{where}.lever", ("experiment",))
        for i, other in enumerate(e.rerun_when or ()):
            lever_of(other, f"{where}.rerun_when[{i}]", SPEEDUP_KINDS)
