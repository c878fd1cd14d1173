"""A local run whose optseq stopped after its passes ran (its final write failed on a full disk, or it was
killed while recording its end) is finished from its passes' logs by the next optseq that can write: the same
samples, the same pair accounting, the same rule, so the same decision. The passes are counted from the logs (a
disk that filled mid-run may have kept the later passes' starts out of the record). A run whose logs end
mid-pass, or whose passes ask for more, stays `interrupted`.
"""
from __future__ import annotations

import json
from pathlib import Path

from optseq.state.errors import InputError
from optseq.state.record_types import Run
from optseq.state.runs.host import RunHost
from optseq.state.runs.lever_run import RunControl, RunReport, Unfinishable, _run
from optseq.state.runs.run_pass import Go, Resume


def logged_passes(run: Run, run_dir: Path) -> int | None:
    """The passes a local run's logs hold, each whole, the last one's log with its done event; None where they end
    mid-pass. Counted from the logs, not from the record: a pass whose start could not be recorded (a full disk
    under the store) ran and logged all the same."""
    passes = _launched(run)
    if passes is None:
        return None
    while (run_dir / f"pass-{passes + 1}.log").is_file():
        passes += 1
    if not all((run_dir / f"pass-{n}.log").is_file() for n in range(1, passes + 1)):
        return None
    done = any(_is_done(line) for line in (run_dir / f"pass-{passes}.log").read_bytes().splitlines()[-50:])
    return passes if done else None


def _launched(run: Run) -> int | None:
    """The passes whose start a local run recorded, where it recorded one (a run found in flight that never
    launched has no logs); else None."""
    return run.passes if run.runner == "local" and run.passes is not None and run.passes >= 1 else None


def _is_done(line: bytes) -> bool:
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("event") == "done"


def finish_from_logs(host: RunHost, run_id: int) -> RunReport | None:
    """The run decided from its logs (its record updated, its decision made as at its end), or None where it
    cannot be (the lever held elsewhere, logs that end mid-pass, passes that ask for more)."""
    run = host.run(run_id)
    if run.lever is None or not host.plan.has_lever(run.lever) or _launched(run) is None:
        return None  # (before its folder is asked for, which makes it)
    run_dir = host.run_dir(run_id)
    passes = logged_passes(run, run_dir)
    if passes is None:
        return None
    lever = host.plan.lever(run.lever)
    try:
        hold = host.hold(lever.id)
    except InputError:
        return None  # another process runs this lever now: its run is the word
    try:
        go = Go(runner=None, on_event=None, on_log=lambda line: None, control=RunControl(), arms=run.arms,
                resume=Resume(attach_pass=passes + 1, elapsed_s=0.0, address=None, finish_only=True))
        try:
            report = _run(host, lever, run_id, run_dir, run.infra or {}, go)
        except Unfinishable:
            return None
        with host.writing():
            host.update(run_id, {"note": f"its optseq (pid {run.pid}) stopped before "
                                                      "recording its end; finished from its passes' logs"})
        return report
    finally:
        hold.release()
