"""A screen's error and cost, simulated beside the same levers decided one at a time, on the same workload.

Each draw is one simulated workload with k levers of known main effects and one real interaction. The screen: a
design (state/screen/design.py) chosen for the budget, one untimed warm-up launch a block and then the block's runs
in a seeded random order, every run a launch of the workload with that subset of the levers on, through the real
judge (state/screen/screen_passes.ScreenPasses) until every lever is decided or the blocks are spent. Beside it, on
the same workload, each lever as `--run ready` decides a command-pair lever: ABPasses over pairs against the stack
(every other lever off), the arms driver's one warm-up launch of each arm a pass, then the pairs in ABBA order,
every arm a launch of its own. A launch's speed: the subset's true speed, times its own log-normal offset (the
process's layout, the clock it lands on) and Gaussian noise, slower at the start of a pass or block (warm-up,
fading by e every two launches), drifting over it, now and then stalled 1.5-5× slow, printed to a few digits.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from optseq.state.bench import perf_doc
from optseq.state.bench.sim_bench import Noise
from optseq.state.plan.model import Rule
from optseq.state.runs.passes import ABPasses
from optseq.state.runs.sequential import BOUND
from optseq.state.screen import design as designs
from optseq.state.screen.analysis import Observation
from optseq.state.screen.screen_passes import ScreenPasses

SECTION = "screen"
SEED = 20261206
DRAWS = 1000
THRESHOLD = 1.1
METRIC = "items_per_s"
BASE = 100.0
RULE = Rule(METRIC, min_speedup=THRESHOLD)
"""Every lever's rule: min_speedup 1.1, the default repeats 5 and max_repeats 20 pairs."""
ONE_LEVER = 2 * RULE.max_repeats
"""Timed launches one command-pair lever's run may spend: its pairs' two arms."""
INTERACTION = 1.10
NOISE = Noise("launch sd 2%, 1% a launch, warm-up 10%, drift +0.1% a launch, 2% stalls 1.5-5×, 4 digits",
              sigma=0.01, launch_sd=0.02, warmup=0.10, drift=0.001, stall_p=0.02, stall=(1.5, 5.0), digits=4)


@dataclass(frozen=True)
class Lever:
    name: str
    ratio: float
    """Its main effect: speed with it over without, averaged over the others (its ratio against the stack
    where it interacts with nothing)."""
    role: str
    """gain | threshold | below: a real gain, a null exactly at its threshold, a lever below it."""


def budget(k: int) -> int:
    """The screen's budget in timed launches: one lever's (so every lever's effect is measured on as many launches
    as its own run may spend), raised to the first look of a resolution V design where that needs more (k = 8)."""
    fifth = [d for d in designs.candidates(NAMES[:k]) if d.resolution is None or d.resolution >= 5]
    return max(ONE_LEVER, min(len(d.runs) * designs.first_blocks(d) for d in fifth))


@dataclass(frozen=True)
class Setting:
    levers: tuple[Lever, ...]
    pair: tuple[str, str]
    """The two levers that interact: a's ratio with b on over with b off is INTERACTION."""
    budget: int
    noise: Noise = NOISE

    @property
    def k(self) -> int:
        return len(self.levers)


LEVERS = (("g1", 1.25, "gain"), ("t1", THRESHOLD, "threshold"), ("b1", 0.95, "below"), ("g2", 1.20, "gain"),
          ("t2", THRESHOLD, "threshold"), ("g3", 1.30, "gain"), ("b2", 1.00, "below"), ("t3", THRESHOLD, "threshold"))
NAMES = tuple(row[0] for row in LEVERS)


def _levers(k: int) -> tuple[Lever, ...]:
    return tuple(Lever(*row) for row in LEVERS[:k])


def settings() -> list[Setting]:
    # the interaction lies between a gain and a lever below: nulls at their threshold interact with nothing, so
    # their ratio against the stack is their threshold in the screen and one at a time alike
    rows = [Setting(_levers(k), ("g1", "b1"), budget(k)) for k in (3, 4, 6, 8)]
    # at one lever's budget six levers get two blocks of the 2^(6-2) IV (one of the 2^(6-1) would leave its only
    # look 10 residual df); at 64 two blocks of the 2^(6-1) VI, each pair named apart, beside it
    return rows[:3] + [Setting(_levers(6), ("g1", "b1"), 64)] + rows[3:]


def true_log_speed(setting: Setting, on: set[str]) -> float:
    """±1 coding: main effect r is exp(2β), the interaction exp(4β)."""
    log = math.log(BASE)
    for lever in setting.levers:
        log += (1 if lever.name in on else -1) * math.log(lever.ratio) / 2
    a, b = setting.pair
    log += (1 if a in on else -1) * (1 if b in on else -1) * math.log(INTERACTION) / 4
    return log


def measured(noise: Noise, log_speed: float, index: int, rng: random.Random) -> float:
    """One launch's printed throughput: `index` counts the launches of its pass or block, warm-ups first."""
    value = math.exp(log_speed + rng.gauss(0.0, noise.launch_sd)) * (1 + rng.gauss(0.0, noise.sigma))
    value /= 1 + noise.warmup * math.exp(-index / 2)
    value *= 1 + noise.drift * index
    if noise.stall_p and rng.random() < noise.stall_p:
        value /= rng.uniform(*noise.stall)
    value = max(value, 1e-9)
    return float(f"{value:.{noise.digits}g}") if noise.digits else value


def screen_draw(setting: Setting, rng: random.Random) -> tuple[dict, tuple[str, ...], int]:
    """One screen: (each lever's outcome, the significant interactions' names, launches incl. warm-ups)."""
    names = tuple(lever.name for lever in setting.levers)
    design = designs.choose(names, setting.budget)
    passes = ScreenPasses(design, {n: RULE for n in names}, True, setting.budget // len(design.runs))
    seed, obs, launches, block = rng.getrandbits(32), [], 0, 0
    while True:
        for _ in range(passes.requested):
            block += 1
            measured(setting.noise, true_log_speed(setting, set()), 0, rng)  # the block's warm-up launch
            launches += 1
            # the judge's design, as the run's: folded over, its next blocks run the other half
            for i, run in enumerate(designs.order(passes.design, block, seed), start=1):
                on = {f for f, x in zip(names, passes.design.runs[run]) if x > 0}
                obs.append(Observation(block, run, measured(setting.noise, true_log_speed(setting, on), i, rng)))
                launches += 1
        step = passes.after_pass(obs)
        if not step.more:
            return ({n: c.outcome for n, c in step.calls.items()}, tuple(e.name for e in step.interactions),
                    launches)


def one_lever_draw(setting: Setting, lever: str, rng: random.Random) -> tuple[str, int]:
    """One lever decided as `--run ready` does a command-pair lever: (outcome, launches incl. warm-ups)."""
    passes = ABPasses(RULE, replicate="pair")
    arms = {"baseline": true_log_speed(setting, set()), "candidate": true_log_speed(setting, {lever})}
    launches = 0
    while True:
        token = f"{rng.getrandbits(64):016x}"
        index, samples = 0, []
        for arm in ("baseline", "candidate"):  # the driver's warm-up run of each arm
            measured(setting.noise, arms[arm], index, rng)
            index += 1
        for pair in range(passes.requested):
            first_base = (pair + passes.passes + 1) % 2 == 1
            for position, arm in enumerate(("baseline", "candidate") if first_base else ("candidate", "baseline")):
                samples.append({"event": "sample", "arm": arm, "metric": METRIC, "higher_is_better": True,
                                "value": measured(setting.noise, arms[arm], index, rng), "pair": pair,
                                "first": position == 0, "run": passes.passes + 1, "launch": token})
                index += 1
        launches += index
        step = passes.after_pass(samples, token=token)
        if step.failure:
            return "failed", launches
        if not step.more:
            return step.verdict.outcome, launches


@dataclass(frozen=True)
class Row:
    setting: Setting
    draws: int
    design: str
    screen: dict
    """lever -> outcome -> draws."""
    alone: dict
    found: int
    """Draws whose screen named the real interaction (or a chain of aliases holding it)."""
    other: int
    """Draws whose screen named an interaction that is not there."""
    screen_launches: int
    alone_launches: int

    def share(self, count: int) -> float:
        return count / self.draws

    def worst(self, table: dict, role: str, outcome: str) -> float | None:
        counts = [table[lv.name].get(outcome, 0) for lv in self.setting.levers if lv.role == role]
        return max(counts) / self.draws if counts else None

    def power(self, table: dict) -> float | None:
        a, b = self.setting.pair
        counts = [table[lv.name].get("adopt", 0) for lv in self.setting.levers
                  if lv.role == "gain" and lv.name not in (a, b)]
        return min(counts) / self.draws if counts else None


def simulate(setting: Setting, draws: int) -> Row:
    rng = random.Random(f"{SEED}:{setting.k}:{setting.budget}:{setting.noise}")
    screen: dict[str, dict[str, int]] = {lv.name: {} for lv in setting.levers}
    alone: dict[str, dict[str, int]] = {lv.name: {} for lv in setting.levers}
    found = other = s_launches = a_launches = 0
    name = designs.choose([lv.name for lv in setting.levers], setting.budget)
    real = "×".join(setting.pair)
    for _ in range(draws):
        calls, named, launches = screen_draw(setting, rng)
        s_launches += launches
        for lever, outcome in calls.items():
            screen[lever][outcome] = screen[lever].get(outcome, 0) + 1
        hit = [n for n in named if n == real or real in name.aliases().get(n, ())]
        found += bool(hit)
        other += any(n not in hit for n in named)
        for lv in setting.levers:
            outcome, launches = one_lever_draw(setting, lv.name, rng)
            a_launches += launches
            alone[lv.name][outcome] = alone[lv.name].get(outcome, 0) + 1
    return Row(setting, draws, name.kind(), screen, alone, found, other, s_launches, a_launches)


def table(draws: int = DRAWS, progress=None, k: int | None = None, budget: int | None = None) -> list[Row]:
    """Every row, or those of `k` levers and/or that budget alone (a row explored without the whole table)."""
    return perf_doc.rows_of(_chosen(k, budget), lambda setting: simulate(setting, draws), progress)


def _chosen(k: int | None, budget: int | None) -> list[Setting]:
    return [s for s in settings() if k in (None, s.k) and budget in (None, s.budget)]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def render(rows: list[Row], command: str) -> str:
    s0 = rows[0].setting
    lines = [f"<!-- section:{SECTION} -->", "## A screen against one lever at a time (simulated)", "",
             f"Written by `{command}`, with the sections above; seeded. Each draw is one simulated workload "
             "(`optseq.state.bench.sim_screen`) with k levers of known main effects: real gains (g: 1.25×, 1.20×, "
             f"1.30×), nulls exactly at their threshold (t: {THRESHOLD}×), levers below it (b: 0.95×, 1.00×), every "
             f"rule min_speedup {THRESHOLD}×, and one real interaction, g1 × b1: g1 gains {INTERACTION:.2f}× as "
             f"much with b1 on. Noise: {s0.noise.label}. The *screen* runs the design its budget allows (one untimed "
             f"warm-up launch a block, counted) through `ScreenPasses`; its budget is one lever's run's, {ONE_LEVER} "
             "timed launches, raised to a resolution V design's first look where that needs more (k = 8: 64); "
             "*alone* decides "
             "each lever as `--run ready` does a command-pair lever (ABPasses over pairs, the default 5 pairs up to "
             "20, one warm-up launch of each arm a pass, counted), against the stack with every other lever off, on "
             "the same workload.", "",
             "*false adopt* is the worst share of draws adopting a null at its threshold (bound "
             f"{BOUND:.0%} each); *false reject* the worst share rejecting one; *power* the share adopting the real "
             "gain adopted least often (of those in no interaction); *interaction* the share of screens naming "
             "g1 × b1 (or an alias chain holding it), *spurious* those naming one that is not there; *launches* the "
             "mean launches to decide every lever (or spend the budget), warm-ups included.", "",
             "| k | budget | design | false adopt: screen / alone | false reject: screen / alone | power: screen / alone | "
             "interaction | spurious | launches: screen / alone | screen's share |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        share = r.screen_launches / r.alone_launches
        lines.append(f"| {r.setting.k} | {r.setting.budget} | {r.design} | {_pct(r.worst(r.screen, 'threshold', 'adopt'))} / "
                     f"{_pct(r.worst(r.alone, 'threshold', 'adopt'))} | "
                     f"{_pct(r.worst(r.screen, 'threshold', 'reject'))} / "
                     f"{_pct(r.worst(r.alone, 'threshold', 'reject'))} | {_pct(r.power(r.screen))} / "
                     f"{_pct(r.power(r.alone))} | {_pct(r.share(r.found))} | {_pct(r.share(r.other))} | "
                     f"{r.screen_launches / r.draws:.1f} / {r.alone_launches / r.draws:.1f} | {share:.0%} |")
    lines += ["", *verdicts(rows), f"{rows[0].draws} draws per row.", "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    """The issue's goals against the figures, said whether met or not."""
    out = []
    worst = max(rows, key=lambda r: r.worst(r.screen, "threshold", "adopt") or 0)
    fa = worst.worst(worst.screen, "threshold", "adopt") or 0
    out.append(f"Worst false adopt at the threshold in a screen: {_pct(fa)} (k = {worst.setting.k}): "
               f"{'within' if fa <= BOUND else 'OVER'} the {BOUND:.0%} bound.")
    goals = {4: 0.5, 8: 0.3}
    for r in rows:
        if r.setting.k in goals:
            share = r.screen_launches / r.alone_launches
            out.append(f"k = {r.setting.k}: the screen took {share:.0%} of one-at-a-time's launches, goal at most "
                       f"{goals[r.setting.k]:.0%}: {'met' if share <= goals[r.setting.k] else 'NOT met'}.")
    found = ", ".join(f"{_pct(r.share(r.found))} (k = {r.setting.k}, budget {r.setting.budget})" for r in rows)
    short = [r for r in rows if r.found < 0.9 * r.draws]
    out.append(f"The 10% interaction was named in {found}; goal at least 90%: " + (
        "met on every row." if not short else "NOT met at " + ", ".join(
            f"k = {r.setting.k} with a budget of {r.setting.budget}" for r in short) + "."))
    return [" ".join(out)]


def main(argv: list[str] | None = None) -> int:
    """`python -m optseq.state.bench.sim_screen [--draws N] [--k K] [--budget B] [--write PATH]`: this section alone
    (make simulate writes it with the others, at half its --draws); --k and --budget print those rows alone."""
    import argparse
    import sys
    from pathlib import Path

    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.sim_screen", description=__doc__.split("\n\n")[0])
    p.add_argument("--draws", type=int, default=DRAWS, help=f"draws per row (default {DRAWS})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    p.add_argument("--k", type=int, default=None, help="only the rows of this many levers (printed, never written)")
    p.add_argument("--budget", type=int, default=None, help="only the rows of this budget (printed, never written)")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error(f"--draws {args.draws}: needs at least one draw")
    rows = _chosen(args.k, args.budget)
    if not rows:
        p.error(f"no row of {args.k or 'any number of'} levers at a budget of {args.budget or 'any size'}: the rows "
                "are " + ", ".join(f"k = {s.k} at {s.budget}" for s in settings()))
    if args.write is not None and len(rows) < len(settings()):
        p.error("--k and --budget print rows alone; --write writes the whole table")
    command = "python -m optseq.state.bench.sim_screen" + (f" --draws {args.draws}" if args.draws != DRAWS else "") + (
        f" --write {args.write}" if args.write else "")
    section = render(table(args.draws, k=args.k, budget=args.budget), command)
    if args.write is None:
        print(section)
        return 0
    try:
        perf_doc.write_section(args.write, section, SECTION)
    except perf_doc.SectionError as e:
        p.exit(2, f"optseq.state.bench.sim_screen: {e}\n")
    print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
