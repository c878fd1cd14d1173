"""Stopping a Ray job that no optseq will follow again: a compare's, whose optseq died (a compare has no lever, and
`--run LEVER` is what re-attaches), stopped by the next optseq that opens the store. Best effort, in one line."""
from __future__ import annotations

import threading
from pathlib import Path

from optseq.state.runners.ray_jobs import cancel_marker, one_line

LEFT_STOP_S = 10.0
"""How long the stop may wait for the cluster."""


def stop_left(address: str | None, sid: str, run_dir: Path | None) -> str:
    """Stop the job of a run no optseq will follow again (a compare whose optseq died), best effort: one line on
    what became of it; never raises, and waits at most LEFT_STOP_S for the cluster."""
    how = f"ray job stop {sid} --address {address} stops it" if address else f"ray job stop {sid} stops it"
    if not address:
        return f"its Ray job {sid} may still be running (the run kept no cluster address; {how})"
    try:
        if run_dir is not None:
            cancel_marker(run_dir, sid).touch()  # a job still pending then exits before its command
    except OSError:
        pass
    said: list[str] = []

    def stop() -> None:
        try:
            from ray.job_submission import JobSubmissionClient

            said.append("stopped" if JobSubmissionClient(address).stop_job(sid) else "ended")
        except Exception as exc:  # Ray missing, the cluster gone, the job unknown: all said in one line
            said.append(one_line(exc) or type(exc).__name__)

    # the client's requests have no timeout of their own: a cluster that never answers must not hold this up
    thread = threading.Thread(target=stop, name=f"stop {sid}", daemon=True)
    thread.start()
    thread.join(LEFT_STOP_S)
    if not said:
        return f"its Ray job {sid} may still be running: {address} did not answer within {LEFT_STOP_S:g} s ({how})"
    if said[0] == "stopped":
        return f"its Ray job {sid} at {address} is stopped"
    if said[0] == "ended" or "does not exist" in said[0]:
        return f"its Ray job {sid} at {address} had already ended"
    return f"its Ray job {sid} may still be running: stopping it failed ({said[0]}; {how})"
