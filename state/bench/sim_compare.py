"""The commit gate's error, simulated: `optseq compare` on a workload at two commits, against the anchors' rule.

Each draw is one compare: every pass is one run of the arms driver, which runs `warmup` untimed runs of each
commit and then the pairs, every arm run its own process with its own speed, in the driver's order, and emits
`sample` events as it does; they go through the real pass loop (ABPasses over pairs) and the gate's rule
(optseq.state.runs.commit_gate) until it stops. On the same draws, the rule CI dashboards use: one run of each
commit against a fixed threshold (github-action-benchmark's alert), and that alert re-run once to confirm.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from optseq.state.bench import perf_doc
from optseq.state.runs import commit_gate
from optseq.state.runs.passes import ABPasses

ORDERS = ("alternate", "random")
"""The driver's orders: ABBA (every other pass starting with HEAD), and a seeded coin per pair."""
BASE_S = 5.0
"""BASE's true run time; HEAD's is BASE_S / the true speed ratio."""
START_S = 1.0
"""Seconds an arm run costs beyond the time it measures (process start, imports, exit)."""
ANCHOR = 0.10
"""The anchors' alert: HEAD's time more than this fraction above BASE's (github-action-benchmark's
`alert-threshold: 110%` as projects set it, its default being 200%; CodSpeed's default regression threshold)."""
TOLERANCES = (0.05, 0.03)
METRIC = "wall_s"
SEED = 20261202
SECTION = "compare"


@dataclass(frozen=True)
class Workload:
    """Everything that moves one arm run's time away from its commit's true time."""

    label: str
    sigma: float = 0.0
    """Relative Gaussian noise of one run's speed."""
    launch_sd: float = 0.0
    """Each run's own speed as a process (memory layout, clock it lands on): log-normal, median 1."""
    warmup: float = 0.0
    """The pass's first arm runs are slower by this fraction, fading by e every two runs (caches, clocks)."""
    order: str = "alternate"
    warmups: int = 1
    """Untimed runs of each arm before a pass's pairs, as the driver's `warmup` (1 by default)."""


def arm_runs(work: Workload, ratio: float, pairs: int, pass_no: int, token: str,
             rng: random.Random) -> tuple[list[dict], int, float]:
    """One pass of the driver: its samples, the arm runs it made (warm-ups too) and the seconds they took."""
    true = {"baseline": BASE_S, "candidate": BASE_S / ratio}
    runs, seconds = 0, 0.0
    for _ in range(work.warmups):
        for arm in ("baseline", "candidate"):
            seconds += START_S + _run_time(work, true[arm], runs, rng)
            runs += 1
    samples = []
    for pair in range(pairs):
        if work.order == "alternate":
            base_first = (pair + pass_no) % 2 == 1  # kit.pairs: pass 1 starts with BASE, pass 2 with HEAD
        else:
            base_first = rng.random() < 0.5
        for position, arm in enumerate(("baseline", "candidate") if base_first else ("candidate", "baseline")):
            value = _run_time(work, true[arm], runs, rng)
            seconds += START_S + value
            runs += 1
            samples.append({"event": "sample", "arm": arm, "metric": METRIC, "value": value, "unit": "s",
                            "higher_is_better": False, "pair": pair, "first": position == 0, "run": pass_no,
                            "launch": token})
    return samples, runs, seconds


def _run_time(work: Workload, true_s: float, run: int, rng: random.Random) -> float:
    speed = math.exp(rng.gauss(0.0, work.launch_sd)) if work.launch_sd else 1.0
    speed *= max(1 + rng.gauss(0.0, work.sigma), 1e-3) if work.sigma else 1.0
    return true_s / speed * (1 + work.warmup * math.exp(-run / 2))


@dataclass(frozen=True)
class Setting:
    group: str
    truth: str
    ratio: float
    """HEAD's true speed over BASE's: what the rule's threshold 1 / (1 + tolerance) is set against."""
    tolerance: float
    work: Workload


@dataclass(frozen=True)
class Row:
    setting: Setting
    draws: int
    not_slower: int
    slower: int
    inconclusive: int
    launches: int
    """Arm runs over all draws, warm-ups included: each is a process."""
    pairs: int
    seconds: float
    one_run: int
    """Draws where one run of each commit (the first pair) alerts at ANCHOR."""
    confirmed: int
    """...and the re-run (the second pair) alerts too."""

    def pct(self, count: int) -> str:
        return f"{100 * count / self.draws:.1f}%"


def draw(rule, ratio: float, work: Workload, rng: random.Random) -> tuple:
    """One compare: (outcome, arm runs, pairs, seconds, first pair alerts, second pair alerts)."""
    passes = ABPasses(rule, replicate="pair")
    runs, seconds = 0, 0.0
    alerts: list[bool] = []
    while True:
        token = f"{rng.getrandbits(64):016x}"
        samples, made, took = arm_runs(work, ratio, passes.requested, passes.passes + 1, token, rng)
        if not alerts:
            alerts = [_alerts(samples, pair) for pair in (0, 1)]
        runs, seconds = runs + made, seconds + took
        step = passes.after_pass(samples, token=token, duration_s=took)
        if step.failure:
            return "failed", runs, len(passes.book.pairs), seconds, *alerts
        if not step.more:
            return step.verdict.outcome, runs, step.stats.n, seconds, *alerts


def _alerts(samples: list[dict], pair: int) -> bool:
    """github-action-benchmark's test on one run of each commit: HEAD's time over BASE's above 1 + ANCHOR."""
    time = {s["arm"]: s["value"] for s in samples if s["pair"] == pair}
    return time["candidate"] > (1 + ANCHOR) * time["baseline"]


def simulate(setting: Setting, draws: int) -> Row:
    rule = commit_gate.rule(METRIC, setting.tolerance)
    rng = random.Random(f"{SEED}:{setting}")
    counts = {"adopt": 0, "reject": 0, "inconclusive": 0, "failed": 0}
    runs = pairs = one_run = confirmed = 0
    seconds = 0.0
    for _ in range(draws):
        outcome, made, n_pairs, took, first, second = draw(rule, setting.ratio, setting.work, rng)
        counts[outcome] += 1
        runs, pairs, seconds = runs + made, pairs + n_pairs, seconds + took
        one_run, confirmed = one_run + first, confirmed + (first and second)
    return Row(setting, draws, counts["adopt"], counts["reject"], counts["inconclusive"] + counts["failed"],
               runs, pairs, seconds, one_run, confirmed)


def _truths(tolerance: float, faster: bool = False):
    truths = [("no change", 1.0), ("slower by the tolerance", commit_gate.threshold(tolerance)),
              ("slower by 2× the tolerance", commit_gate.threshold(2 * tolerance))]
    return truths + [("faster by the tolerance", 1.0 + tolerance)] * faster


def settings() -> list[Setting]:
    rows = []
    t, t_small = TOLERANCES
    for sigma in (0.02, 0.05, 0.10):
        rows += [Setting("iid noise", truth, ratio, t, Workload(f"{sigma:.0%} a run", sigma))
                 for truth, ratio in _truths(t, faster=True)]
    for sd in (0.01, 0.03):
        work = Workload(f"run sd {sd:.0%}, 2% a run", 0.02, launch_sd=sd)
        rows += [Setting("per-run offsets", truth, ratio, t, work) for truth, ratio in _truths(t)]
    for order in ORDERS:
        work = Workload(f"{order}, 2% a run", 0.02, warmup=0.10, order=order)
        rows += [Setting("warm-up 10%, fading over ~4 runs", truth, ratio, t, work) for truth, ratio in _truths(t)]
    # the error at the threshold is the sign test's whatever the tolerance; what a compare costs is not
    for sigma in (0.02, 0.05):
        rows += [Setting("iid noise", truth, ratio, t_small, Workload(f"{sigma:.0%} a run", sigma))
                 for truth, ratio in _truths(t_small)]
    return rows


def table(draws: int, progress=None) -> list[Row]:
    return perf_doc.rows_of(settings(), lambda setting: simulate(setting, draws), progress)



def render(rows: list[Row], command: str) -> str:
    rule = commit_gate.rule(METRIC, TOLERANCES[0])
    lines = [f"<!-- section:{SECTION} -->", "## The commit gate's error (simulated)", "",
             f"Written by `{command}`, with the section above; seeded, so the same command gives the same table. "
             "Each draw is one `optseq compare BASE HEAD` on a simulated workload (`optseq.state.bench.sim_compare`): "
             "every pass is a run of the arms driver, one untimed warm-up run of each commit, then the pairs, every "
             "arm run its own process with its own noise, in the driver's order (ABBA, every other pass starting "
             "with HEAD, unless the row says random), through the real pass loop over pairs and the gate's rule "
             f"(`optseq.state.runs.commit_gate`: threshold 1 / (1 + tolerance), {rule.repeats} pairs in the first "
             f"pass, doubling up to {rule.max_repeats}). *not slower* is a false pass on the rows slower by the "
             "tolerance and a miss on those slower by twice it; *slower* is a false alarm on the no-change and "
             "faster rows. *arm runs* are the processes a compare starts, warm-ups included; *seconds* what they "
             f"take with BASE at {BASE_S:g} s a run and {START_S:g} s to start a process.",
             "",
             f"Beside them, on the same draws, the anchors' rule: *one run* alerts when HEAD's first timed run takes "
             f"more than {1 + ANCHOR:.2f}× BASE's (github-action-benchmark's alert on one run of each commit); "
             "*confirmed* alerts when the next pair alerts too (an alert re-run once before anyone acts on it). "
             "At no change every alert is false; at 2× the tolerance every silence is a miss.", "",
             "| setting | tolerance | truth (HEAD's time) | noise | not slower | slower | inconclusive | arm runs | "
             "pairs | seconds | one run: alerts | confirmed: alerts |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r.setting
        lines.append(f"| {s.group} | {commit_gate.tolerance_text(s.tolerance)} | {s.truth} ({1 / s.ratio:.3g}×) | "
                     f"{s.work.label} | {r.pct(r.not_slower)} | {r.pct(r.slower)} | {r.pct(r.inconclusive)} | "
                     f"{r.launches / r.draws:.1f} | {r.pairs / r.draws:.1f} | {r.seconds / r.draws:.0f} | "
                     f"{r.pct(r.one_run)} | {r.pct(r.confirmed)} |")
    lines += ["", *summary(rows), "", f"<!-- /section:{SECTION} -->"]
    return "\n".join(lines)


def summary(rows: list[Row]) -> list[str]:
    """The figures a reader comes for, taken from the rows: the gate's errors and costs, the anchors' beside."""
    at = [r for r in rows if r.setting.truth == "slower by the tolerance"]
    passed = max(at, key=lambda r: r.not_slower)
    alarm = max((r for r in rows if r.setting.truth == "no change"), key=lambda r: r.slower)
    edge = max(at, key=lambda r: r.slower)
    alarms = f"{alarm.pct(alarm.slower)} ({_where(alarm)})" if alarm.slower else f"{alarm.pct(0)} on every no-change row"
    lines = [f"Worst P(not slower) at a slowdown equal to the tolerance: {passed.pct(passed.not_slower)} "
             f"({_where(passed)}); worst P(slower) at no change: {alarms}, and "
             f"at the tolerance itself, where `slower` (by more than it) is false too: {edge.pct(edge.slower)} "
             f"({_where(edge)}); bound 5% each. At the tolerance a pair lands on either side of the threshold with "
             "probability 1/2 whatever the tolerance is, so that error is the sign test's and the 3% rows check it; "
             f"what a compare costs depends on the tolerance against the noise. {rows[0].draws} draws per row."]
    tol = commit_gate.tolerance_text(TOLERANCES[0])
    main = [r for r in rows if r.setting.group == "iid noise" and r.setting.tolerance == TOLERANCES[0]]
    same = [r for r in main if r.setting.truth == "no change"]
    twice = [r for r in main if r.setting.truth == "slower by 2× the tolerance"]
    for name, picked in (("no change", same), ("slower by 2× the tolerance", twice)):
        lines += ["", f"What a compare takes, {name}, at a {tol} tolerance (iid noise, mean over draws): " + "; ".join(
            f"{r.setting.work.label}: {r.launches / r.draws:.0f} arm runs ({r.pairs / r.draws:.0f} pairs), "
            f"{r.seconds / r.draws:.0f} s" for r in picked) + "."]
    alarms = "; ".join(f"{r.setting.work.label}: {r.pct(r.one_run)} / {r.pct(r.confirmed)} / {r.pct(r.slower)}"
                       for r in same)
    misses = "; ".join(f"{r.setting.work.label}: {r.pct(r.draws - r.one_run)} / {r.pct(r.draws - r.confirmed)} / "
                       f"{r.pct(r.not_slower + r.inconclusive)}" for r in twice)
    lines += ["", f"The anchors' rule on the same draws (iid noise, {tol} tolerance). False alarms at no change, one "
                  f"run / confirmed / the gate's `slower`: {alarms}. Misses at a slowdown of 2× the tolerance "
                  f"(HEAD {1 / twice[0].setting.ratio:.2f}× BASE's time), one run / confirmed / the gate without "
                  f"`slower`: {misses}. A fixed threshold on one run alarms more as the noise grows, and a slowdown "
                  "at its threshold is a coin toss for it; confirming trades false alarms for misses. The gate holds "
                  "both errors and spends runs instead. (Under ABBA the first pair runs BASE first, into the last of "
                  "the warm-up: that lowers the anchors' alerts on the warm-up rows.)"]
    return lines


def _where(row: Row) -> str:
    s = row.setting
    return f"{s.group}, {s.work.label}, tolerance {commit_gate.tolerance_text(s.tolerance)}"
