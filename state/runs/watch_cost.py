"""What a watch is about to cost, said before it starts: the adopted levers it re-checks, how long their last runs
here took, and how long it may take at that pace if every lever needs its whole budget, against their timeouts
together (a nightly job has a slot to fit in)."""
from __future__ import annotations

from optseq.state.lifecycle.run_index import KeptRun
from optseq.state.runs.host import RunHost
from optseq.state.runs.run_pass import _length


def preamble(host: RunHost) -> list[str]:
    """One or two lines for `--run watch`."""
    levers = host.watchable()
    took = most = timeouts = 0.0
    unknown = []
    for lever_id in levers:
        lever = host.plan.lever(lever_id)
        timeouts += lever.timeout_s
        last = next((r for r in reversed(host.machine.runs.recent.get(lever_id) or ())
                     if r.status == "succeeded" and r.elapsed_s is not None), None)
        if last is None or last.elapsed_s is None:
            unknown.append(lever_id)
            continue
        took += last.elapsed_s
        most += last.elapsed_s * _budget_share(lever, last)
    head = f"watch: {len(levers)} adopted lever{'s' * (len(levers) != 1)} in dependency order ({', '.join(levers)})"
    if len(unknown) < len(levers):
        head += f"; their last runs here took {_length(took)} in all, up to {_length(most)} if each needs its budget"
    if unknown:
        head += f"; {', '.join(unknown)}: no run here yet, no length to go by"
    lines = [head + f" (timeouts {_length(timeouts)} together)"]
    if most > timeouts:
        lines.append(f"watch: a watch that needs every lever's whole budget takes longer than their timeouts "
                     f"together ({_length(most)} against {_length(timeouts)}): a lever may stop at its timeout, "
                     "inconclusive")
    return lines


def _budget_share(lever, run: KeptRun) -> float:
    """How many times the last run's units its rule's whole budget is (1 where it cannot be told)."""
    from optseq.state.runs.passes import ABPasses, replicate_of

    rule = lever.rule
    if rule is None or rule.choose or lever.kind == "experiment":
        return 1.0
    replicate = replicate_of(lever)
    units = run.stats.launches if replicate == "launch" else run.stats.n
    if units is None or units <= 0:
        return 1.0
    return max(1.0, ABPasses(rule, replicate).budget / units)
