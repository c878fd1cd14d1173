"""What the main screen follows outside itself: other processes' writes to the store, a run on a cluster whose
optseq died, and a branch lever's commit merged or moved in another shell."""
from __future__ import annotations

from optseq.console.widgets.lever_table import LeverTable
from optseq.state.errors import InputError
from optseq.state.store.store import StoreError

FOLLOW_S = 0.5
"""How often the console looks for other processes' writes."""
CODE_FOLLOW_S = 3.0
"""How often the console asks git whether a branch lever's commit was merged or its branch moved."""


class Following:
    """Mixed into MainScreen, which gives it `seq`, `panel`, `refresh_view` and `action_view`."""

    def start_following(self) -> None:
        # other processes write to the same store (a shell's record, a run in another shell): follow them.
        # A check is one stat of the hot file; only a change costs more.
        self.set_interval(FOLLOW_S, self._follow)
        if any(l.arms is not None and l.arms.branch for l in self.seq.plan.levers) and not self.seq.readonly:
            # git is asked off the UI thread
            self.set_interval(CODE_FOLLOW_S, lambda: self.run_worker(self._follow_code, thread=True,
                                                                     group="code", exclusive=True))

    def _follow(self) -> None:
        if self.seq.reload():
            self.refresh_view()

    def _follow_code(self) -> None:
        try:
            moved = self.seq.code_moves()
        except (InputError, StoreError):
            return  # the store is busy or full: the next look tries again
        if moved:
            self.app.call_from_thread(self.refresh_view)

    def _reattach(self) -> None:
        """A run on a cluster whose optseq died goes on there: this console follows it to its decision."""
        if self.seq.readonly or self.panel.running:
            return
        detached = self.seq.detached_runs()
        if detached:
            first = detached[0]
            self.notify(f"re-attaching run {first['run']} of {first['lever']} (Ray job {first.get('submission_id')})")
            self.query_one(LeverTable).select(first["lever"])
            self.panel.start(self.seq, first["lever"])
            self.action_view("run")
