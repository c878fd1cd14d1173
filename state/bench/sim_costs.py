"""What a decision costs in launches: the sequential runs of the simulation against a fixed design of the same error
and power, and against pyperf's default of 20 processes × 3 values, each as a sign test over launches."""
from __future__ import annotations

import random
import statistics

from optseq.state.bench.sim_bench import launch
from optseq.state.runs.sequential import ALPHA


MAX_POWER = 0.99
"""A fixed design matched to a sequential power of 100% would need unboundedly many launches: capped here."""
PYPERF = (20, 3)
"""pyperf's default: 20 worker processes, 3 values each."""
P_DRAWS = 20000
MAX_LAUNCHES = 2000


def comparison(rows) -> list[str]:
    """Markdown lines: the launches a decision needs at +5% and +10% over the threshold."""
    from scipy import stats

    picked = [r for r in rows if r.setting.truth in ("threshold × 1.05", "threshold × 1.1") and r.units
              and (r.setting.group == "per-launch offsets" or
                   (r.setting.group == "iid noise" and r.setting.noise.sigma == 0.05 and r.setting.repeats == 5))]
    if not picked:
        return []
    lines = ["", f"What a decision costs, as a sign test over launches at {ALPHA:.0%} one-sided: the sequential runs "
                 "above (mean over draws); a fixed design with the same error and the same power (capped at "
                 f"{MAX_POWER:.0%}) at the sequential runs' pairs a launch, which must run all its launches; and "
                 f"pyperf's default of {PYPERF[0]} processes × {PYPERF[1]} values, with its power at that effect.",
             "", "| effect | noise | sequential: power, launches (pairs) | fixed: launches (pairs) | "
                 f"pyperf {PYPERF[0]} × {PYPERF[1]}: power |", "|---|---|---|---|---|"]
    for r in picked:
        s = r.setting
        power = r.adopt / r.draws
        p = r.above / r.units
        per_launch = r.pairs / r.launches
        fixed = _fixed_launches(p, min(power, MAX_POWER))
        fixed_text = f"{fixed} ({fixed * per_launch:.0f})" if fixed else f"over {MAX_LAUNCHES}"
        p3 = _p_launch_above(s, PYPERF[1])
        n = PYPERF[0]
        pyperf_power = stats.binom.sf(_needed(n) - 1, n, p3)
        lines.append(f"| {s.truth} ({s.ratio:.3g}× vs {s.threshold:g}×) | {s.noise.label} | {power:.1%}, "
                     f"{r.launches / r.draws:.1f} ({r.pairs / r.draws:.0f}) | {fixed_text} | {pyperf_power:.1%} |")
    return lines


def _needed(n: int) -> int:
    from scipy import stats

    return int(stats.binom.isf(ALPHA, n, 0.5)) + 1


def _fixed_launches(p: float, power: float) -> int | None:
    from scipy import stats

    for n in range(1, MAX_LAUNCHES + 1):
        if stats.binom.sf(_needed(n) - 1, n, p) >= power:
            return n
    return None


def _p_launch_above(setting, pairs: int) -> float:
    """How often one launch of `pairs` pairs has its median ratio above the threshold, by direct draws."""
    rng = random.Random(f"pyperf:{setting}")
    above = 0
    for i in range(P_DRAWS):
        samples, _ = launch(setting.noise, setting.ratio, pairs, 1 + i % 2, "t", rng)
        values = {(s["pair"], s["arm"]): s["value"] for s in samples}
        ratios = [values[(k, "candidate")] / values[(k, "baseline")] for k in range(pairs)]
        above += statistics.median(ratios) > setting.threshold
    return above / P_DRAWS
