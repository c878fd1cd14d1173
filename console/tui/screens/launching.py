"""The main screen's runs: r, n, R and w start them in the Run tab's panel, x cancels them, and a run on a cluster
whose optseq died is followed again; how each ended is said in a notification."""
from __future__ import annotations

from optseq.console.tui.screens.host import ScreenHost
from optseq.console.tui.screens.screening import Screening
from optseq.console.tui.widgets.next_step import todo_hint
from optseq.console.tui.widgets.reported import Reported
from optseq.state.api import InputError


class Launcher:
    """Starts and cancels the levers' runs of the screen it is given; a screen under way (`screening`) shares the
    machine, so nothing starts beside it."""

    def __init__(self, host: ScreenHost, screening: Screening) -> None:
        self.host = host
        self.screening = screening

    @property
    def running(self) -> bool:
        """A lever's run, a parallel group or a screen is under way."""
        return self.host.panel.running or self.screening.running

    def _refused(self) -> bool:
        if self.running:  # a screen's launches share the machine too
            self.host.notify(f"{self.host.panel.lever or 'a screen'} is running; cancel it first (x)",
                             severity="warning")
        return self.running

    def run_selected(self) -> None:
        if self.host.selected:
            self.start(self.host.selected)

    def run_next(self) -> None:
        host = self.host
        status = host.seq.views.status()
        lever_id = status.next
        if lever_id is None:
            todo = status.todo
            host.notify("nothing is ready to run" + (f" · {todo_hint(todo[0])}" if todo else ""), severity="warning")
            return
        host.table.select(lever_id)
        self.start(lever_id)

    def run_ready_parallel(self) -> None:
        host = self.host
        if self._refused():
            return
        status = host.seq.views.status()
        if status.next is None and not any(v.state == "ready" for v in status.levers):
            host.notify("nothing is ready to run", severity="warning")
            return
        if host.seq.lever_runs.runner.name == "local":
            host.notify(f"up to {host.parallel} levers at once on this machine: their timings share its cores",
                        severity="warning")
        host.panel.start_group(host.seq, "ready", host.parallel)
        host.action_view("run")

    def watch(self) -> None:
        host = self.host
        if self._refused():
            return
        elsewhere = host.seq.lever_runs.watch_refusals()  # adopted on another testbed: said, not measured here
        if not host.seq.lever_runs.watchable():
            host.notify("; ".join(elsewhere) or "nothing to watch: no adopted lever has a command to measure it with",
                        severity="warning")
            return
        if elsewhere:
            host.notify("; ".join(elsewhere), severity="warning")
        # here the levers share this machine's cores, which a watch's figures must not: one at a time
        host.panel.start_group(host.seq, "watch", host.parallel if host.seq.lever_runs.runner.name != "local" else 1)
        host.action_view("run")

    def start(self, lever_id: str) -> None:
        host = self.host
        if self._refused():
            return
        try:
            host.seq.lever_runs.check_runnable(lever_id)
        except InputError as exc:
            host.notify(str(exc), severity="error", timeout=8)
            return
        host.panel.start(host.seq, lever_id)
        host.action_view("run")

    def cancel(self) -> None:
        # in a parallel group, the selected lever's run alone when it is one of them; else everything that runs
        if not self.host.panel.cancel(self.host.selected) and not self.screening.cancel():
            self.host.notify("nothing is running", severity="warning")

    def reattach(self) -> None:
        """A run on a cluster whose optseq died goes on there: this console follows it to its decision."""
        host = self.host
        if host.seq.readonly or host.panel.running:
            return
        detached = host.seq.views.detached_runs()
        if detached:
            first = detached[0]
            host.notify(f"re-attaching run {first.run} of {first.lever} (Ray job {first.submission_id})")
            host.table.select(str(first.lever))
            host.panel.start(host.seq, str(first.lever))
            host.action_view("run")

    def tell(self, lever_id: str, report: Reported | None, error: str | None) -> None:
        """How one run ended, in a notification."""
        if report is None:
            self.host.notify(f"{lever_id}: {error}", severity="error", timeout=8)
            return
        failed = report.status not in ("succeeded", "inconclusive")
        self.host.notify(f"run #{report.run_id} {report.status}: {report.message}",
                         severity="error" if failed else "information", timeout=8)
