"""What the main screen follows outside itself: other processes' writes to the store, an edit of the plan file, and
a branch lever's commit merged or moved in another shell."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from optseq.console.tui.screens.host import ScreenHost
from optseq.state.api import InputError
from optseq.state.api import PlanError
from optseq.state.api import StoreError

if TYPE_CHECKING:
    from textual.timer import Timer

    from optseq.state.api import LeverStatus

FOLLOW_S = 0.5
"""How often the console looks for other processes' writes."""
CODE_FOLLOW_S = 3.0
"""How often the console asks git whether a branch lever's commit was merged or its branch moved."""
RACY_NS = 2_000_000_000
"""A plan file changed this recently may change again within its timestamp's grain, its size kept: its bytes are
compared until it is older (git's racy-clean rule)."""

Signature = tuple[int, int, int]
"""A file's (mtime, size, inode)."""


class Follower:
    """Looks for other writers' records, the plan file's edits and branch levers' commits, and refreshes the
    screen it is given when one of them moved something."""

    def __init__(self, host: ScreenHost) -> None:
        self.host = host
        self._plan_seen: Signature | None = None
        """The plan file as last read."""
        self._plan_told: Signature | None = None
        """The plan file as last said unreadable (or waiting for a run): said once per edit, not at every look."""
        self._code_timer: Timer | None = None

    def start(self) -> None:
        # other processes write to the same store (a shell's record, a run in another shell), and the user edits
        # the plan: follow both. A check is one stat of the hot file and one of the plan; only a change costs more.
        self._plan_seen = _signature(self.host.seq.plan.path)
        self.host.set_interval(FOLLOW_S, self._follow)
        self._follow_code_when_branches()

    def _follow_code_when_branches(self) -> None:
        host = self.host
        if self._code_timer is None and not host.seq.readonly and any(
                l.arms is not None and l.arms.branch for l in host.seq.plan.levers):
            # git is asked off the UI thread
            self._code_timer = host.set_interval(CODE_FOLLOW_S, lambda: host.run_worker(
                self._follow_code, thread=True, group="code", exclusive=True))

    def _follow(self) -> None:
        if self.follow_plan() | self.host.seq.follower.reload():
            self.host.refresh_view()

    def follow_plan(self) -> bool:
        """Read the plan file again once it changed on disk (as `optseq status` would read it): True when the plan
        shown is a new one. An edit that is not a valid plan keeps the last good one, and the banner says what is
        wrong and where until the file is fixed. A lever running reads its plan when it ends (as `--run ready`
        reads it between levers)."""
        host, seq = self.host, self.host.seq
        seen = _signature(seq.plan.path)
        if seen == self._plan_seen and not _racy(seen):
            return False
        if host.panel.running:
            if seen != self._plan_seen and seen != self._plan_told:
                self._plan_told = seen
                host.notify(f"{seq.plan.path} changed on disk: read again once the run of "
                            f"{', '.join(sorted(host.panel.running_levers))} ends", timeout=10, markup=False)
            return False
        plan, before = seq.plan, host.shown  # the views on screen now
        try:
            seq.reload_plan()
        except PlanError as exc:
            self._plan_seen = seen
            host.plan_banner(str(exc))
            return False
        except (InputError, StoreError) as exc:  # the store is busy or full: tried again at the next look
            if seen != self._plan_told:
                self._plan_told = seen
                host.notify(str(exc), severity="warning", markup=False)
        else:
            self._plan_seen = seen
            host.plan_banner(None)
        if seq.plan is plan:
            return False
        self._follow_code_when_branches()
        self._say_stale(before)
        return True

    def _say_stale(self, before: dict[str, LeverStatus]) -> None:
        """What the edit made stale, in status's words (the detail pane and `optseq status` give the same)."""
        seq = self.host.seq
        lines = [f"{v.id} stale: {v.stale_reason or 'invalidated'}" for v in seq.views.lever_views()
                 if v.stale and not ((was := before.get(v.id)) is not None and was.stale)]
        self.host.notify(" · ".join([f"{seq.plan.path} read again", *lines]), timeout=10, markup=False)

    def _follow_code(self) -> None:
        try:
            moved = self.host.seq.code.branch_moves()
        except (InputError, StoreError):
            return  # the store is busy or full: the next look tries again
        if moved:
            self.host.app.call_from_thread(self.host.refresh_view)


def _signature(path: str | os.PathLike[str]) -> Signature | None:
    """The plan file's (mtime, size, inode): an edit in place or an editor's write-and-rename changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _racy(seen: Signature | None) -> bool:
    return seen is not None and time.time_ns() - seen[0] < RACY_NS
