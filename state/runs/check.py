"""`optseq check LEVER`: one run of each arm on the current stack, before any pair is spent; nothing is recorded.

Prints what each arm is given (argv, cwd, the environment optseq adds) and what is read from it (the metric,
the guards) and how long it took, the way hyperfine's --show-output lets a benchmark be seen before it is
trusted. A command-pair lever's arms run through optseq's own driver in its check mode; a protocol lever is
launched once, asked for one pair, and its samples and quality events are shown as they were parsed.
"""
from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Callable

from optseq.state.errors import InputError
from optseq.state.runners.interface import RunSpec
from optseq.state.runners.local import Launcher
from optseq.state.runs.host import RunHost
from optseq.state.runs.measured_on import stack

CHECK_RUN_ID = "check"
"""OPTSEQ_RUN_ID of a check: no run of the store has it."""


def check(host: RunHost, lever_id: str, say: Callable[[str], None] = print) -> int:
    """0 when both arms ran and gave their number, 1 otherwise (the reason said), 3 when the lever cannot run
    here (unavailable)."""
    lever = host.lever(lever_id)
    if not lever.run:
        raise InputError(f"{lever_id} has no command to check (it is decided by hand or by its criteria)")
    infra = host.machine.infra()
    infra["adopted"] = [lid for lid in infra["adopted"] if lid != lever_id]
    with tempfile.TemporaryDirectory(prefix="optseq-check-") as artifacts:
        env = {"OPTSEQ_RUN_ID": CHECK_RUN_ID, "OPTSEQ_INFRA": json.dumps(infra), "OPTSEQ_PASS": "1",
               "OPTSEQ_REPEATS": "1", "OPTSEQ_ARTIFACTS": artifacts, "OPTSEQ_LAUNCH": CHECK_RUN_ID}
        if lever.arms is not None:
            on_stack = stack(host.plan, host.machine, lever_id)
            say(f"{lever_id}: on the stack {' + '.join(on_stack.levers) or '(nothing adopted)'}"
                + (f"; outside it: {', '.join(on_stack.outside)}" if on_stack.outside else "")
                + (f"; adopted, not merged (not in it): {', '.join(on_stack.unmerged)}" if on_stack.unmerged else ""))
            spec = lever.arms.to_dict(on_stack)
            with contextlib.ExitStack() as hold:
                if lever.arms.candidate_ref is not None:  # a branch lever: each arm at its commit, in its
                    # worktree, after the setup there
                    from optseq.state.code import branch

                    commits = branch.resolve(lever.arms.cwd, lever.arms.baseline_ref, lever.arms.candidate_ref,
                                             lever_id)
                    spec["trees"] = branch.trees(commits, lever.arms.setup, hold)
                env["OPTSEQ_ARMS"] = json.dumps(spec)
                outcome = Launcher(RunSpec(argv=[*lever.run, "--check"], env=env, timeout_s=lever.timeout_s)).run(
                    on_log=say)
            if outcome.exit_code not in (0, 1):  # the driver says its own failure; this is a crash or a timeout
                say(f"{lever_id}: {outcome.detail}")
            return 0 if outcome.exit_code == 0 else 1
        return _protocol(lever, env, say)


def _protocol(lever, env: dict, say: Callable[[str], None]) -> int:
    say(f"{lever.id}: argv {' '.join(lever.run)}")
    say(f"{lever.id}: env " + " ".join(f"{k}={v}" for k, v in env.items() if k != "OPTSEQ_ARTIFACTS"))
    started = time.monotonic()
    outcome = Launcher(RunSpec(argv=list(lever.run), env=env, timeout_s=lever.timeout_s)).run(
        on_log=lambda line: say(f"{lever.id}| {line}"))
    for s in outcome.samples:
        say(f"{lever.id}: pair {s.get('pair')} {s.get('arm')}: {s.get('metric')} = {s.get('value'):g} "
            f"{s.get('unit') or ''}".rstrip())
    for q in outcome.qualities:
        say(f"{lever.id}: guard {q.get('name')} = {q.get('value'):g} (limit {q.get('limit')})")
    say(f"{lever.id}: {outcome.detail}; took {time.monotonic() - started:.3g} s")
    if outcome.status == "unavailable":
        return 3
    wanted = lever.rule.metric if lever.rule else None
    if outcome.status != "succeeded" or (wanted and not any(s.get("metric") == wanted for s in outcome.samples)):
        if wanted and outcome.status == "succeeded":
            say(f"{lever.id}: no sample of {wanted}, the rule's metric")
        return 1
    return 0
