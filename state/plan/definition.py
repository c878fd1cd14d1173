"""A lever's resolved definition, part by part: what its numbers are measured with, so a plan edit shows as stale."""
from __future__ import annotations

import json
import os
from pathlib import Path

from optseq.state.sha import hex_digest


def definition(lever, plan_path: str | Path) -> dict[str, str]:
    """part -> a short hash: the command (the workload's, or the lever's own), its change (candidate_args,
    candidate_env, baseline_env), the workload's environment, the metric, the guards, the arms' cwd (relative to
    the plan, so a moved clone stays the same), warm-up and order; a protocol lever's run; the rule's metric,
    bar and guards. Budgets (repeats, launches) change how long a run takes, never what it measures: left out."""
    parts: dict[str, object] = {}
    arms = lever.arms
    if arms is not None:
        parts["command"] = [list(arms.baseline), list(arms.candidate)] if arms.whole else list(arms.baseline)
        parts["candidate_args"] = list(arms.candidate_args)
        parts["candidate_env"] = dict(arms.candidate_env)
        parts["baseline_env"] = dict(arms.baseline_env)
        parts["workload env"] = dict(arms.workload_env)
        parts["metric"] = [arms.metric, arms.source.to_dict(), arms.unit, arms.higher_is_better]
        parts["guards"] = [g.to_dict() for g in arms.guards]
        parts["cwd"] = os.path.relpath(arms.cwd, Path(plan_path).resolve().parent)
        parts["warmup"], parts["order"] = arms.warmup, arms.order
        if arms.branch:  # the refs as written: the commits they name are the run's, and a moved branch says so
            parts["refs"] = [arms.baseline_ref or "HEAD", arms.candidate_ref]
            parts["setup"] = list(arms.setup)
    else:
        parts["run"] = list(lever.run)
    rule = lever.rule
    if rule is not None:
        parts["rule"] = [rule.metric, rule.min_speedup, [[g.name, g.max, g.min] for g in rule.guards], rule.choose,
                         rule.margin, rule.cost_metric, rule.max_cost_ratio]
    return {key: _hash(value) for key, value in parts.items()}


def changed(before: dict, now: dict) -> list[str]:
    """The parts whose hash differs, in the order of `now` (a part `before` lacks counts, one `now` lacks too)."""
    keys = list(now) + [k for k in before if k not in now]
    return [k for k in keys if before.get(k) != now.get(k)]


def _hash(value) -> str:
    return hex_digest(json.dumps(value, sort_keys=True, default=str))[:12]
