"""Run a screen's design runs (`points` in OPTSEQ_ARMS): each run of the design is the workload with that subset of
the levers' changes, launched as its own process in the order the screen gave, one sample per run. In a screen of
branch levers each point names the worktree of the commit it launches (`tree`, as a branch lever's arm does): the
workload runs there, in the spec's `trees.rel`, the setup run once per commit, the checkout checked after each
launch (trees.py)."""
from __future__ import annotations

import os
from pathlib import Path

from optseq.engine import kit
from optseq.engine.arms import trees
from optseq.engine.arms.driver import Arm, ArmFailed, env_facts


def arm(spec: dict, index: int, ready: dict[str, Path] | None = None) -> Arm:
    """Design run `index` as an arm of the driver: its argv and environment from the spec's points, and its
    commit's worktree made ready (`ready`: commit -> checkout, shared by the points of one commit; SetupFailed)."""
    point = spec["points"][index]
    name = f"run-{index}"
    given = {**spec, name: point["argv"], f"{name}_env": point["env"]}
    tree = point.get("tree")
    if not tree:
        return Arm(name, given)
    given["trees"] = {**spec["trees"], name: tree}
    ready = {} if ready is None else ready
    if tree["commit"] not in ready:
        ready[tree["commit"]] = trees.ready(f"design run {index}", tree, given,
                                            say=lambda line: print(line, flush=True))
    return Arm(name, given, str(ready[tree["commit"]] / spec["trees"].get("rel", ".")))


def run(spec: dict) -> int:
    """This launch's part of the design, `sequence` ([block, run index] pairs, in order): the workload's warm-ups
    first (untimed runs of the first run in the sequence), then each run once, each its own process."""
    sequence = [(int(block), int(index)) for block, index in spec["sequence"]]
    ready: dict[str, Path] = {}
    try:
        arms = {index: arm(spec, index, ready) for index in dict.fromkeys(i for _, i in sequence)}
    except trees.SetupFailed as exc:
        kit.fail(str(exc))
        return 1
    first, last = spec["points"][0], spec["points"][-1]
    ends = {"baseline": first["argv"], "candidate": last["argv"]}
    if spec.get("trees"):  # the code: the commits of the design's first and last runs, as a branch lever's two arms
        ends["trees"] = {"baseline": first["tree"], "candidate": last["tree"]}
    kit.env(**env_facts({**spec, **ends}))
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
                     higher_is_better=bool(spec["higher_is_better"]), pair=position, block=block, **token,
                     **({"commit": one.commit} if one.commit else {}))
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
