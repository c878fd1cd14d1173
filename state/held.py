"""What one open of a plan holds, shared by the sequencer's parts: the plan, its store, the lever machine, the lock
around them and what git answered. A reload swaps the plan and the machine, a store's first write swaps the store:
every part reads them here at each call, so none keeps a stale one."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from optseq.state.errors import InputError
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.plan.model import Lever, Plan
from optseq.state.store.store import Store

Creates = tuple[Path, Any]
"""Where a "create" open's store is to be made, and the wait callback its Store.open takes (first_write.py)."""


class Held:
    """The plan, the store and the machine of one open, and the lock every access to them takes."""

    machine: PlanMachine
    """Set by Follower.load as the open starts, and again by every reload or rollback."""

    def __init__(self, plan: Plan, store: Store):
        self.plan = plan
        self.store = store
        self.creates: Creates | None = None
        """Set while the store is left to the first write (Sequencer.open's mode "create"); None once it is made."""
        self.lock = threading.RLock()
        """Held around every store access: the console reads on its UI thread while a run writes."""
        self.warnings: list[str] = []
        self.git: dict[Any, Any] = {}
        """What git answered (a branch merged, a repository's head), asked once per process and store change."""

    @property
    def readonly(self) -> bool:
        return bool(getattr(self.store, "readonly", False)) and self.creates is None

    def forget_git(self) -> None:
        """Another process wrote, or the code may have moved: git is asked again."""
        self.git.clear()

    def lever(self, lever_id: str) -> Lever:
        try:
            return self.plan.lever(lever_id)
        except KeyError:
            from optseq.state.plan.fields import did_you_mean

            ids = [l.id for l in self.plan.levers]
            raise InputError(f"unknown lever {lever_id!r}{did_you_mean(lever_id, ids)} (plan {self.plan.path} has: "
                             f"{', '.join(ids)})") from None
