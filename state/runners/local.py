"""The local runner: the lever's command as a child process of this optseq (state/runner.py's Launcher)."""
from __future__ import annotations

from optseq.state.runner import Launcher, RunOutcome, RunSpec


class LocalRunner:
    name = "local"

    def launch(self, spec: RunSpec, *, run_id: int, attempt: int, resources=None, tag: str = "") -> LocalLaunch:
        return LocalLaunch(spec)


class LocalLaunch:
    def __init__(self, spec: RunSpec):
        self.launcher = Launcher(spec)

    def cancel(self) -> None:
        self.launcher.cancel()

    def run(self, on_event=None, on_log=None, on_start=None) -> RunOutcome:
        started = None if on_start is None else (lambda pid, pgid: on_start({"child_pid": pid, "pgid": pgid}))
        return self.launcher.run(on_event=on_event, on_log=on_log, on_start=started)
