"""Decision quality: seeded lever runs through the real pass loop and decision rule, on benches that behave like
real ones (launches with their own speed, warm-up, drift, stalls, rounding), no engine, no timing.

`python -m optseq.state.bench.simulate [--draws N] [--write docs/performance.md] [--rows TEXT ...]`

Each draw is one lever run: every pass is one launch of a simulated bench (state/bench/sim_bench.py) that
measures the pairs it is asked for, and its samples go through the pair accounting, the sequential statistics
and the rule (optseq.state.runs.passes.ABPasses, the code a lever run uses), until it adopts, rejects or spends
its budget. The table gives, per setting, how often it adopted (a false adopt when the true ratio is at the
threshold, power above it), rejected (a false reject at the threshold), or stayed inconclusive, and what a run
took: launches, pairs, and the seconds those cost at the bench's launch and pair costs. The same command writes
the commit gate's table (`optseq compare`, state/bench/sim_compare.py) into a section of its own, and a screen's
beside the same levers decided one at a time (state/bench/sim_screen.py), at half the draws, in another.
"""
from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from optseq.state.bench import perf_doc, sim_compare, sim_screen
from optseq.state.bench.sim_bench import ORDERS, Noise, launch
from optseq.state.plan.model import Rule
from optseq.state.runs.passes import ABPasses

THRESHOLD = 1.1
"""min_speedup of the simulated rules (AMP's and compile's in the default plan); A/A rows use 1.0."""
DRAWS = 2000
SECTION = "decisions"
SEED = 20261201
PAIR_BUDGET = 18
"""max_repeats = PAIR_BUDGET × repeats: the launch budget (18 by default), not the pairs, ends a run."""


@dataclass(frozen=True)
class Setting:
    group: str
    truth: str
    ratio: float
    threshold: float
    noise: Noise
    repeats: int = 5
    replicate: str = "launch"
    """"pair": the test before this one, counting pairs as independent (for contrast rows)."""
    max_repeats: int | None = None
    """None: PAIR_BUDGET × repeats."""

    @property
    def at_threshold(self) -> bool:
        return abs(self.ratio - self.threshold) < 1e-12


@dataclass(frozen=True)
class Row:
    setting: Setting
    draws: int
    adopt: int
    reject: int
    inconclusive: int
    launches: int
    pairs: int
    seconds: float
    above: int = 0
    units: int = 0
    """Launches above the threshold, and launches, over all draws: what one launch says at this effect."""
    met_stall: int = 0
    adopted_after_stall: int = 0
    """Runs that measured at least one stall, and how many of those adopted."""

    def pct(self, count: int) -> str:
        return f"{100 * count / self.draws:.1f}%"


def draw_run(rule: Rule, ratio: float, noise: Noise, rng: random.Random, replicate: str = "launch") -> tuple:
    """One simulated lever run: (adopt | reject | inconclusive | failed, launches, pairs, seconds, units above
    the threshold, units counted, stalls measured)."""
    passes = ABPasses(rule, replicate=replicate)
    seconds, stalls = 0.0, 0
    while True:
        token = f"{rng.getrandbits(64):016x}"
        asked = passes.requested
        samples, stalled = launch(noise, ratio, asked, passes.passes + 1, token, rng)
        stalls += stalled
        took = noise.launch_s + asked * noise.pair_s
        seconds += took
        step = passes.after_pass(samples, token=token, duration_s=took, pair_s=noise.pair_s)
        if step.failure:
            return "failed", passes.passes, len(passes.book.pairs), seconds, 0, 0, stalls
        if not step.more:
            stats = step.stats
            return (step.verdict.outcome, stats.launches, stats.n, seconds, stats.above or 0, len(stats.units),
                    stalls)


def simulate(setting: Setting, draws: int) -> Row:
    rule = Rule("items_per_s", min_speedup=setting.threshold, repeats=setting.repeats,
                max_repeats=setting.max_repeats or PAIR_BUDGET * setting.repeats)
    rng = random.Random(f"{SEED}:{setting}")
    counts = {"adopt": 0, "reject": 0, "inconclusive": 0, "failed": 0}
    launches = pairs = above = units = met = met_adopted = 0
    seconds = 0.0
    for _ in range(draws):
        outcome, n_launches, n_pairs, took, up, n_units, stalls = draw_run(rule, setting.ratio, setting.noise, rng,
                                                                           setting.replicate)
        counts[outcome] += 1
        launches, pairs, seconds = launches + n_launches, pairs + n_pairs, seconds + took
        above, units = above + up, units + n_units
        met, met_adopted = met + (stalls > 0), met_adopted + (stalls > 0 and outcome == "adopt")
    return Row(setting, draws, counts["adopt"], counts["reject"], counts["inconclusive"] + counts["failed"],
               launches, pairs, seconds, above, units, met, met_adopted)


def _truths(threshold: float = THRESHOLD):
    return (("A/A", 1.0, 1.0), ("threshold", threshold, threshold), ("threshold × 1.05", threshold * 1.05, threshold),
            ("threshold × 1.1", threshold * 1.1, threshold))


def settings() -> list[Setting]:
    rows = []
    for label, sigma in (("2%", 0.02), ("5%", 0.05), ("10%", 0.10)):
        for truth, ratio, threshold in _truths():
            for repeats in (5, 8):
                rows.append(Setting("iid noise", truth, ratio, threshold, Noise(f"{label} per sample", sigma),
                                    repeats))
    outliers = Noise("5%, 1 in 10 samples 1.5× slow", 0.05, outliers=0.1)
    rows += [Setting("iid noise", t, r, th, outliers, 5) for t, r, th in _truths()[:2]]
    for sd in (0.01, 0.02, 0.03):
        noise = Noise(f"launch sd {sd:.0%}, 1% per sample", 0.01, launch_sd=sd)
        truths = _truths() if sd == 0.02 else _truths()[:2]
        rows += [Setting("per-launch offsets", t, r, th, noise) for t, r, th in truths]
    for order in ORDERS:
        rows.append(Setting("warm-up 10%, fading over ~4 calls", "threshold", THRESHOLD, THRESHOLD,
                            Noise(f"{order}, 1% per sample", 0.01, warmup=0.10, order=order)))
    # a protocol bench that runs the baseline first and writes each sample as it measures it, saying nothing of the
    # order (kit.sample without `first`): the order its samples came in is taken for it
    silent = Noise("baseline first, no `first` (order from emission), 1% per sample", 0.01, warmup=0.10,
                   order="baseline first", report_first=False)
    rows += [Setting("warm-up 10%, fading over ~4 calls", t, r, th, silent) for t, r, th in _truths()[:2]]
    for drift, what in ((0.002, "speed-up +0.2% a call"), (-0.002, "throttle −0.2% a call")):
        for order in ORDERS:
            rows.append(Setting(f"drift: {what}", "threshold", THRESHOLD, THRESHOLD,
                                Noise(f"{order}, 1% per sample", 0.01, drift=drift, order=order)))
    stalls = Noise("2% of candidate calls 5–20× slower, 1% per sample", 0.01, stall_p=0.02)
    rows += [Setting("one-arm stalls", "threshold", THRESHOLD, THRESHOLD, stalls),
             Setting("one-arm stalls", "median × 1.1, total 0.98×", THRESHOLD * 1.1, THRESHOLD, stalls)]
    rounded = Noise("3 significant digits, 1% per sample", 0.01, digits=3)
    rows += [Setting("rounded output", t, r, th, rounded) for t, r, th in (_truths()[1], _truths()[3])]
    # the test before this one, for contrast: pairs as independent draws, repeats 5 up to 20 pairs, no word on
    # which arm ran first (the old kit.paired ran the baseline first in every pair)
    old = "pairs as the unit (before)"
    for sd in (0.01, 0.03):
        noise = Noise(f"launch sd {sd:.0%}, 1% per sample", 0.01, launch_sd=sd, report_first=False)
        rows += [Setting(old, t, r, th, noise, replicate="pair", max_repeats=20) for t, r, th in _truths()[:2]]
    # that test read no order at all: its bench's samples come in no order it could take for one
    rows.append(Setting(old, "threshold", THRESHOLD, THRESHOLD,
                        Noise("warm-up 10%, baseline first, 1% per sample", 0.01, warmup=0.10,
                              order="baseline first", report_first=False, shuffled=True), replicate="pair",
                        max_repeats=20))
    return rows


def table(draws: int = DRAWS, progress=None) -> list[Row]:
    return perf_doc.rows_of(settings(), lambda setting: simulate(setting, draws), progress)


def render(rows: list[Row], command: str, costs: Sequence[str] = ()) -> str:
    noise = rows[0].setting.noise
    lines = [f"<!-- section:{SECTION} -->", "## Decision quality (simulated)", "",
             f"Written by `{command}`; seeded, so the same command gives the same table. Each draw is one lever run",
             "through the real pass loop, pair accounting, sequential sign test over launches and rule",
             "(`optseq.state.runs.passes`), on a simulated bench (`optseq.state.bench.sim_bench`): every pass is a",
             "launch with the noise of its row, measuring the pairs it is asked for after one warm-up call of each",
             f"arm. Rules: min_speedup {THRESHOLD}× (1.0× on A/A rows), `repeats` pairs a launch at most, the first",
             f"look at 6 launches, a budget of 18 launches (max_repeats = {PAIR_BUDGET} × repeats, never the limit); the",
             "last rows run the test before this one for contrast (pairs as the unit, repeats 5 up to 20 pairs, no",
             "arm order read: the bench's samples come in none).",
             f"Seconds: a launch costs {noise.launch_s:g} s to start and {noise.pair_s:g} s a pair. *adopt* is a false",
             "adopt on the A/A and threshold rows and the power on the others; *reject* on a threshold row is a false",
             "reject.", "",
             "| setting | true ratio | repeats | noise | adopt | reject | inconclusive | launches | pairs | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join([*key_cells(r.setting), r.pct(r.adopt), r.pct(r.reject), r.pct(r.inconclusive),
                                        f"{r.launches / r.draws:.1f}", f"{r.pairs / r.draws:.1f}",
                                        f"{r.seconds / r.draws:.0f}"]) + " |")
    bound = [r for r in rows if (r.setting.at_threshold or r.setting.truth == "A/A")
             and r.setting.replicate == "launch"]
    worst = max(bound, key=lambda r: r.adopt)
    # a candidate that stalls is slower than the threshold its stall-free median sits at: rejecting it is right
    worst_reject = max((r for r in bound if not r.setting.noise.stall_p), key=lambda r: r.reject)
    lines += ["", f"Worst false-adopt rate at the threshold: {worst.pct(worst.adopt)} ({worst.setting.group}, "
                  f"{worst.setting.noise.label}); worst false reject: {worst_reject.pct(worst_reject.reject)} "
                  f"({worst_reject.setting.group}, {worst_reject.setting.noise.label}; the stall rows' rejects "
                  f"are right: their candidate is below the threshold with its stalls); bound 5% each. "
                  f"{rows[0].draws} draws per row."]
    for r in rows:
        if r.setting.noise.stall_p and not r.setting.at_threshold:
            lines += ["", f"{r.setting.group}, {r.setting.truth}: a run adopts only when it met no stall; of the "
                          f"{r.met_stall} runs that measured one, {r.adopted_after_stall} adopted. A run of "
                          f"{r.pairs / r.draws:.0f} pairs meets none of a 2% stall with probability "
                          f"{0.98 ** (r.pairs / r.draws):.0%}: no statistic sees a tail its samples lack."]
    silent = [r for r in rows if r.setting.replicate == "launch" and not r.setting.noise.report_first
              and r.setting.noise.order == "baseline first"]
    if silent:
        each = "; ".join(f"{r.setting.truth}: {r.pct(r.adopt)} adopted, stopped after {r.launches / r.draws:.1f} "
                         f"launches" for r in silent)
        lines += ["", f"{silent[0].setting.group}, {silent[0].setting.noise.label}: a bench that says nothing of "
                      "which arm ran first has the order its samples came in taken for it, so one that runs the "
                      f"baseline first in every pair is not decided, as one that says so is not ({each}); the run "
                      "says where its order came from."]
    lines += [*costs, "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def key_cells(s: Setting) -> list[str]:
    """A row's first four cells, which name it: setting, true ratio, repeats, noise."""
    return [s.group, f"{s.truth} ({s.ratio:.3g}× vs {s.threshold:g}×)", str(s.repeats), s.noise.label]


def main(argv: list[str] | None = None) -> int:
    from optseq.state.bench import sim_costs

    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.simulate", description=__doc__.split("\n\n")[0])
    p.add_argument("--draws", type=int, default=DRAWS, help=f"runs per setting (default {DRAWS})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    p.add_argument("--rows", action="append", default=[], metavar="TEXT",
                   help="simulate only the decision rows whose setting, true ratio or noise holds TEXT (repeatable); "
                        "the other rows, the costs and the compare section stay as --write's file has them (each row "
                        "is seeded by its own setting: it comes out as the whole table gives it)")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error(f"--draws {args.draws}: needs at least one draw")
    if args.rows:
        return _rows_only(p, args)

    def progress(done: int, total: int, what: str = "decision") -> None:
        end = "\n" if done == total else ""
        print(f"\rsimulating: {done}/{total} {what} settings", end=end, file=sys.stderr, flush=True)

    shown = progress if sys.stderr.isatty() else None
    rows = table(args.draws, shown)
    compared = sim_compare.table(args.draws, (lambda done, total: progress(done, total, "compare")) if shown else None)
    # a screen draw decides k levers twice (the screen, and each alone): half the draws keep its rows' time near
    # the others'
    screened = sim_screen.table(max(1, args.draws // 2),
                                (lambda done, total: progress(done, total, "screen")) if shown else None)
    command = "python -m optseq.state.bench.simulate" + (f" --draws {args.draws}" if args.draws != DRAWS else "") + (
        f" --write {args.write}" if args.write else "")
    sections = {SECTION: render(rows, command, sim_costs.comparison(rows)),
                sim_compare.SECTION: sim_compare.render(compared, command),
                sim_screen.SECTION: sim_screen.render(screened, command)}
    if args.write:
        try:
            for name, section in sections.items():
                perf_doc.write_section(args.write, section, name)
        except perf_doc.SectionError as e:
            p.exit(2, f"optseq.state.bench.simulate: {e}\n")
        print(f"wrote {args.write}")
    else:
        print("\n\n".join(sections.values()))
    return 0


def _rows_only(p: argparse.ArgumentParser, args) -> int:
    """`--rows`: the named rows simulated, every other one read back from the section --write's file holds."""
    from optseq.state.bench import sim_rows

    if args.write is None:
        p.exit(2, "optseq.state.bench.simulate: --rows needs --write PATH: the rows it does not simulate are read "
                  "from that file\n")
    every = settings()
    chosen = [s for s in every if any(t.lower() in " | ".join(key_cells(s)).lower() for t in args.rows)]
    if not chosen:
        p.exit(2, f"optseq.state.bench.simulate: --rows {', '.join(map(repr, args.rows))}: no row's setting, true "
                  f"ratio or noise holds it\n")
    try:
        kept, costs = sim_rows.read(args.write, SECTION, [s for s in every if s not in chosen], key_cells,
                                    args.draws, Row)
    except sim_rows.RowsError as e:
        p.exit(2, f"optseq.state.bench.simulate: {e}\n")
    for s in chosen:
        print(f"simulating: {' | '.join(key_cells(s))}", file=sys.stderr, flush=True)
        kept[s] = simulate(s, args.draws)
    # the command that gives the whole table: the rows simulated here come out as it gives them
    command = "python -m optseq.state.bench.simulate" + (f" --draws {args.draws}" if args.draws != DRAWS else "") + (
        f" --write {args.write}")
    try:
        perf_doc.write_section(args.write, render([kept[s] for s in every], command, costs), SECTION)
    except perf_doc.SectionError as e:
        p.exit(2, f"optseq.state.bench.simulate: {e}\n")
    print(f"wrote {len(chosen)} row{'s' * (len(chosen) != 1)} into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
