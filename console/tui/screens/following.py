"""What the main screen follows outside itself: other processes' writes to the store, an edit of the plan file, a
run on a cluster whose optseq died, and a branch lever's commit merged or moved in another shell."""
from __future__ import annotations

import os
import time

from optseq.console.tui.widgets.lever_table import LeverTable
from optseq.state.api import InputError
from optseq.state.api import PlanError
from optseq.state.api import StoreError

FOLLOW_S = 0.5
"""How often the console looks for other processes' writes."""
CODE_FOLLOW_S = 3.0
"""How often the console asks git whether a branch lever's commit was merged or its branch moved."""
RACY_NS = 2_000_000_000
"""A plan file changed this recently may change again within its timestamp's grain, its size kept: its bytes are
compared until it is older (git's racy-clean rule)."""


class Following:
    """Mixed into MainScreen, which gives it `seq`, `panel`, `refresh_view` and `action_view`."""

    def start_following(self) -> None:
        # other processes write to the same store (a shell's record, a run in another shell), and the user edits
        # the plan: follow both. A check is one stat of the hot file and one of the plan; only a change costs more.
        self._plan_seen = _signature(self.seq.plan.path)
        self._code_timer = None
        self.set_interval(FOLLOW_S, self._follow)
        self._follow_code_when_branches()

    def _follow_code_when_branches(self) -> None:
        if self._code_timer is None and not self.seq.readonly and any(
                l.arms is not None and l.arms.branch for l in self.seq.plan.levers):
            # git is asked off the UI thread
            self._code_timer = self.set_interval(CODE_FOLLOW_S, lambda: self.run_worker(
                self._follow_code, thread=True, group="code", exclusive=True))

    def _follow(self) -> None:
        if self.follow_plan() | self.seq.reload():
            self.refresh_view()

    def follow_plan(self) -> bool:
        """Read the plan file again once it changed on disk (as `optseq status` would read it): True when the plan
        shown is a new one. An edit that is not a valid plan keeps the last good one, and the banner says what is
        wrong and where until the file is fixed. A lever running reads its plan when it ends (as `--run ready`
        reads it between levers)."""
        seen = _signature(self.seq.plan.path)
        if seen == self._plan_seen and not _racy(seen):
            return False
        if self.panel.running:
            if seen != self._plan_seen and seen != getattr(self, "_plan_told", None):
                self._plan_told = seen
                self.notify(f"{self.seq.plan.path} changed on disk: read again once the run of "
                            f"{', '.join(sorted(self.panel.running_levers))} ends", timeout=10, markup=False)
            return False
        plan, before = self.seq.plan, getattr(self, "_views", {})  # the views on screen now
        try:
            self.seq.reload_plan()
        except PlanError as exc:
            self._plan_seen = seen
            self.plan_banner(str(exc))
            return False
        except (InputError, StoreError) as exc:  # the store is busy or full: tried again at the next look
            if seen != getattr(self, "_plan_told", None):
                self._plan_told = seen
                self.notify(str(exc), severity="warning", markup=False)
        else:
            self._plan_seen = seen
            self.plan_banner(None)
        if self.seq.plan is plan:
            return False
        self._follow_code_when_branches()
        self._say_stale(before)
        return True

    def _say_stale(self, before: dict[str, dict]) -> None:
        """What the edit made stale, in status's words (the detail pane and `optseq status` give the same)."""
        lines = [f"{v['id']} stale: {v.get('stale_reason') or 'invalidated'}" for v in self.seq.lever_views()
                 if v.get("stale") and not (before.get(v["id"]) or {}).get("stale")]
        self.notify(" · ".join([f"{self.seq.plan.path} read again", *lines]), timeout=10, markup=False)

    def plan_banner(self, error: str | None) -> None:
        """Show the plan file's error above everything (None: hide it); made at the first error, never before."""
        banners = self.query("#plan-banner")
        if error is None:
            if banners:
                banners.first().set_class(False, "-shown")
            return
        if banners:
            banner = banners.first()
        else:
            from optseq.console.tui.widgets.plan_banner import PlanBanner

            banner = PlanBanner(id="plan-banner")
            self.mount(banner, before=0)
        banner.show_error(error)

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


def _signature(path) -> tuple[int, int, int] | None:
    """The plan file's (mtime, size, inode): an edit in place or an editor's write-and-rename changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _racy(seen: tuple[int, int, int] | None) -> bool:
    return seen is not None and time.time_ns() - seen[0] < RACY_NS
