"""Run a screen's design runs (`points` in OPTSEQ_ARMS): each run of the design is the workload with that subset of
the levers' changes, launched as its own process in the order the screen gave, one sample per run."""
from __future__ import annotations

import os

from optseq.engine import kit
from optseq.engine.arms.driver import Arm, ArmFailed, env_facts


def arm(spec: dict, index: int) -> Arm:
    """Design run `index` as an arm of the driver: its argv and environment from the spec's points."""
    point = spec["points"][index]
    name = f"run-{index}"
    return Arm(name, {**spec, name: point["argv"], f"{name}_env": point["env"]})


def run(spec: dict) -> int:
    """This launch's part of the design, `sequence` ([block, run index] pairs, in order): the workload's warm-ups
    first (untimed runs of the first run in the sequence), then each run once, each its own process."""
    sequence = [(int(block), int(index)) for block, index in spec["sequence"]]
    arms = {index: arm(spec, index) for index in dict.fromkeys(i for _, i in sequence)}
    kit.env(**env_facts({**spec, "baseline": spec["points"][0]["argv"], "candidate": spec["points"][-1]["argv"]}))
    token = {"launch": os.environ["OPTSEQ_LAUNCH"]} if os.environ.get("OPTSEQ_LAUNCH") else {}
    values: dict[int, list[float]] = {}
    guards: dict[str, dict[int, list[float]]] = {g["name"]: {} for g in spec["guards"]}
    try:
        if sequence:
            first = arms[sequence[0][1]]
            for n in range(spec["warmup"]):
                first._read(spec["source"], first._execute(f"warm-up {n + 1}", f"warmup-{n + 1}"), "warm-up")
        for position, (block, index) in enumerate(sequence):
            one = arms[index]
            label = f"block {block}"
            measured = one._execute(label, str(block))  # OPTSEQ_PAIR: the block, so each run seeds apart
            value = one._read(spec["source"], measured, label)
            for guard in spec["guards"]:
                guards[guard["name"]].setdefault(index, []).append(one._read(guard["source"], measured, label))
            values.setdefault(index, []).append(value)
            kit.emit("sample", arm=one.name, metric=spec["metric"], value=float(value), unit=spec["unit"],
                     higher_is_better=bool(spec["higher_is_better"]), pair=position, block=block, **token)
            kit.progress(position + 1, len(sequence), f"block {block} run {index} ({position + 1}/{len(sequence)})")
    except ArmFailed as exc:
        kit.fail(str(exc))
        return 1
    for guard in spec["guards"]:  # per design run: the screen tells which lever's change broke it
        for index, found in sorted(guards[guard["name"]].items()):
            value = guard_value(guard, found, guards[guard["name"]].get(spec.get("plain")))
            if value is not None:
                kit.emit("quality", name=f"{guard['name']}@run-{index}", value=float(value),
                         limit=float(guard["limit"]), bound=guard["bound"])
    kit.done()
    return 0


def guard_value(guard: dict, values: list[float], plain: list[float] | None) -> float | None:
    """One design run's worst value in the guard's terms: its values against a bound on them, or their difference
    from the run with no lever's change (`plain`), where this launch ran it."""
    bound = guard["bound"]
    if bound in ("max", "min"):
        return max(values) if bound == "max" else min(values)
    if not plain:
        return None
    ref = sum(plain) / len(plain)
    if bound == "max_diff":
        return max(abs(v - ref) for v in values)
    return max(abs(v - ref) / abs(ref) if ref else (0.0 if v == ref else float("inf")) for v in values)
