"""Decision quality: seeded A/B draws through the real pass loop and decision rule, no engine, no timing.

`python -m optseq.state.bench.simulate [--draws N] [--write docs/performance.md]`

Each draw is one lever run: every pass asks for pairs as a real run does, the drawn samples go through
the pair accounting, the sequential statistics and the rule (optseq.state.runs.passes.ABPasses, the code a
lever run uses), until it adopts, rejects or spends its budget. The table gives, per setting, how
often it adopted (a false adopt when the true ratio is at or below the threshold, power above it),
rejected, or stayed inconclusive, and the mean pairs a run took.
"""
from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from optseq.state.bench import perf_doc
from optseq.state.plan.model import Rule
from optseq.state.runs.passes import ABPasses

THRESHOLD = 1.1
"""min_speedup of every simulated rule (AMP's and compile's in the default plan)."""
TRUTHS = (("A/A", 1.0), ("threshold", THRESHOLD), ("threshold × 1.05", THRESHOLD * 1.05),
          ("threshold × 1.1", THRESHOLD * 1.1))
REPEATS = (3, 5, 8)
BUDGET_FACTOR = 4
"""max_repeats = 4 × repeats: looks at repeats, 2 ×, 4 × as a run's doubling makes them."""
NOISES = (("2%", 0.02, 0.0), ("5%", 0.05, 0.0), ("10%", 0.10, 0.0), ("5%, 1 in 10 samples 1.5× slow", 0.05, 0.1))
"""(label, relative Gaussian noise per sample, share of samples hit by a 1.5× slowdown in either arm)."""
DRAWS = 2000
SECTION = "decisions"
SEED = 20261201


@dataclass(frozen=True)
class Row:
    truth: str
    ratio: float
    repeats: int
    budget: int
    noise: str
    draws: int
    adopt: int
    reject: int
    inconclusive: int
    failed: int
    pairs: int
    """Pairs over all draws."""

    @property
    def mean_pairs(self) -> float:
        return self.pairs / self.draws


def draw_run(rule: Rule, ratio: float, sigma: float, outliers: float, rng: random.Random) -> tuple[str, int]:
    """One simulated lever run: (adopt | reject | inconclusive | failed, pairs it took)."""
    passes = ABPasses(rule)
    while True:
        samples = []
        for i in range(passes.requested):
            for arm, mean in (("baseline", 100.0), ("candidate", 100.0 * ratio)):
                value = mean * (1 + rng.gauss(0.0, sigma))
                if outliers and rng.random() < outliers:
                    value /= 1.5  # a throughput metric: a slow sample is a low value
                samples.append({"event": "sample", "arm": arm, "metric": rule.metric, "value": max(value, 1e-9),
                                "higher_is_better": True, "pair": i, "run": passes.passes + 1})
        step = passes.after_pass(samples)
        if step.failure:
            return "failed", len(passes.book.pairs)
        if not step.more:
            return step.verdict.outcome, step.stats.n


def simulate(truth: str, ratio: float, repeats: int, noise: tuple[str, float, float], draws: int) -> Row:
    label, sigma, outliers = noise
    rule = Rule("items_per_s", min_speedup=THRESHOLD, repeats=repeats, max_repeats=BUDGET_FACTOR * repeats)
    rng = random.Random(f"{SEED}:{ratio}:{repeats}:{label}")
    counts = {"adopt": 0, "reject": 0, "inconclusive": 0, "failed": 0}
    pairs = 0
    for _ in range(draws):
        outcome, n = draw_run(rule, ratio, sigma, outliers, rng)
        counts[outcome] += 1
        pairs += n
    return Row(truth, ratio, repeats, rule.max_repeats, label, draws, counts["adopt"], counts["reject"],
               counts["inconclusive"], counts["failed"], pairs)


def table(draws: int = DRAWS, progress=None) -> list[Row]:
    rows = []
    settings = [(t, n) for t in TRUTHS for n in NOISES if n[2] == 0 or t[0] in ("A/A", "threshold")]
    total = len(settings) * len(REPEATS)
    for (truth, ratio), noise in settings:
        for repeats in REPEATS:
            rows.append(simulate(truth, ratio, repeats, noise, draws))
            if progress:
                progress(len(rows), total)
    return rows


def render(rows: list[Row], command: str) -> str:
    lines = [f"<!-- section:{SECTION} -->", "## Decision quality (simulated)", "",
             f"Written by `{command}`; seeded, so the same command gives the same table. Each draw is one",
             "lever run through the real pass loop, pair accounting, sequential sign test and rule",
             f"(`optseq.state.runs.passes`): min_speedup {THRESHOLD}×, repeats pairs first, then doubling up to "
             f"max_repeats = {BUDGET_FACTOR} × repeats.",
             "Noise is per sample, relative, in each arm. *adopt* is a false adopt on the A/A and threshold",
             "rows and the power on the others.", "",
             "| true ratio | repeats → max | noise | adopt | reject | inconclusive | mean pairs |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.truth} ({r.ratio:.3g}×) | {r.repeats} → {r.budget} | {r.noise} | {_pct(r.adopt, r)} | "
                     f"{_pct(r.reject, r)} | {_pct(r.inconclusive + r.failed, r)} | {r.mean_pairs:.1f} |")
    worst = max((r for r in rows if r.truth == "threshold"), key=lambda r: r.adopt)
    lines += ["", f"Worst false-adopt rate at the threshold: {_pct(worst.adopt, worst)} "
                  f"({worst.repeats} → {worst.budget} pairs, {worst.noise} noise; bound 5%). "
                  f"{rows[0].draws} draws per row.", "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def _pct(count: int, row: Row) -> str:
    return f"{100 * count / row.draws:.1f}%"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m optseq.state.bench.simulate", description=__doc__.split("\n\n")[0])
    p.add_argument("--draws", type=int, default=DRAWS, help=f"runs per setting (default {DRAWS})")
    p.add_argument("--write", type=Path, default=None, metavar="PATH", help="write the table into this markdown file")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error(f"--draws {args.draws}: needs at least one draw")

    def progress(done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rsimulating: {done}/{total} settings", end=end, file=sys.stderr, flush=True)

    rows = table(args.draws, progress if sys.stderr.isatty() else None)
    command = "python -m optseq.state.bench.simulate" + (f" --draws {args.draws}" if args.draws != DRAWS else "") + (
        f" --write {args.write}" if args.write else "")
    section = render(rows, command)
    if args.write:
        try:
            perf_doc.write_section(args.write, section, SECTION)
        except perf_doc.SectionError as e:
            p.exit(2, f"optseq.state.bench.simulate: {e}\n")
        print(f"wrote {args.write}")
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
