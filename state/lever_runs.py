"""What running a lever asks of the plan's state before it starts: which levers a `--run` target names now, whether
one may run (or be watched) here, its run lock, and where this process sends its runs. The run itself is
state/runs/lever_run.py's, launched by the Sequencer."""
from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from optseq.state import testbed_views
from optseq.state.errors import InputError
from optseq.state.held import Held
from optseq.state.lifecycle.states import TransitionRefused
from optseq.state.store.locks import LeverLock
from optseq.state.writes import Writer

if TYPE_CHECKING:
    from optseq.state.runners.local import LocalRunner
    from optseq.state.runners.ray_jobs import RayRunner

    Runner = LocalRunner | RayRunner

GROUPS = ("next", "ready", "stale", "watch")
"""The `--run` targets that name a group of levers, re-read after each run (`pick`)."""


class LeverRuns:
    """Run targets, run checks and the run lock; writes nothing but the lock (and a store a first write makes)."""

    GROUPS = GROUPS

    def __init__(self, held: Held, writer: Writer, cannot_run: Callable[[str], str | None]):
        self.held = held
        self.writer = writer
        self.cannot_run = cannot_run
        """Why a ready lever cannot run, git asked (ReadViews.cannot_run)."""
        self._runner: Runner | None = None

    def hold_lever(self, lever_id: str) -> LeverLock:
        """The lever's run lock, taken for this process; InputError naming the run that holds it elsewhere."""
        from optseq.state.store.layout import RUNS_DIR

        self.writer.first_write()  # the run's lock is in the store: a run writes it
        if self.held.readonly:
            raise InputError(f"the store {self.held.store.directory} is read-only here; nothing can run from it")
        lock = LeverLock(self.held.store.directory / RUNS_DIR, lever_id)
        holder = lock.try_acquire({"lever": lever_id})
        if holder is not None:
            raise InputError(f"{lever_id} is running in optseq pid {holder.get('pid', '?')}; wait for it to end, "
                             "or cancel it there")
        return lock

    def check_runnable(self, lever_id: str) -> None:
        self.held.lever(lever_id)
        if self.held.machine.state(lever_id) == "running":
            run = next((a for a in self.held.store.active_runs() if a.lever == lever_id), None)
            if run is not None and run.detached:
                return  # its run goes on on the cluster: running the lever re-attaches to it
            where = f" in optseq pid {run.pid}" if run is not None and run.pid else ""
            raise InputError(f"{lever_id} is running{where} (run {'?' if run is None else run.run}); wait for it to "
                             "end, or cancel it there")
        try:
            self.held.machine.check_runnable(lever_id)
        except TransitionRefused as exc:
            raise InputError(str(exc)) from None
        landed = self.held.machine.models[lever_id].landed
        if landed:
            since = str(landed.since)[:7]
            raise InputError(f"{lever_id} is in the code since {since}: its branch is in the baseline's history now, "
                             f"so nothing of it is left to measure against the baseline (optseq compare {since}^ "
                             f"{since} measures what the merge did)")
        why = self.cannot_run(lever_id)
        if why:
            raise InputError(f"{lever_id} cannot run: {why}")

    def check_refs(self, lever_id: str) -> None:
        """A branch lever's refs name commits of a repository, apart from each other: InputError naming the ref, in
        one line, before a run says it starts."""
        arms = self.held.lever(lever_id).arms
        if arms is None or arms.candidate_ref is None:  # not a branch lever
            return
        from optseq.state.code import branch

        branch.check_apart(branch.resolve(arms.cwd, arms.baseline_ref, arms.candidate_ref, lever_id), lever_id)

    def check_watchable(self, lever_id: str) -> None:
        """A watch checks an adopted lever in the stack on the current code: InputError (one line) for any other."""
        model = self.held.machine.models[lever_id]
        if model.outcome != "adopt":
            raise InputError(f"{lever_id} is {model.state}, not adopted: a watch re-checks an adopted gain "
                             f"(optseq --run {lever_id} measures it)")
        if not model.lever.run:
            raise InputError(f"{lever_id} was adopted by hand and has no command to measure it with")
        refused = self.watch_refusal(lever_id)
        if refused:
            raise InputError(refused)
        if model.landed:
            since = str(model.landed.since)[:7]
            raise InputError(f"{lever_id} is in the code since {since}: its branch is the baseline now (optseq "
                             f"compare {since}^ {since} measures what the merge did)")

    def watch_refusal(self, lever_id: str) -> str | None:
        """Why a watch of a lever is left to another testbed (one line), or None (testbed_views.py)."""
        return testbed_views.watch_refusal(self.held.plan, self.held.machine, lambda: self.runner, lever_id)

    def watch_refusals(self) -> list[str]:
        """One line per adopted lever `--run watch` leaves to another testbed."""
        found = (self.watch_refusal(lid) for lid, m in self.held.machine.models.items()
                 if m.outcome == "adopt" and m.lever.run and not m.landed)
        return [line for line in found if line]

    @property
    def testbed(self) -> dict[str, Any]:
        """{id, name, parts} of the machine this process measures on."""
        return testbed_views.here(self.held.plan)

    @property
    def runner(self) -> Runner:
        """Where this process sends lever runs: the command line's or environment's choice, else the plan's."""
        if self._runner is None:
            from optseq.state.runners.choose import configure, make

            self._runner = make(configure(self.held.plan.runner))
        return self._runner

    @runner.setter
    def runner(self, value: Runner) -> None:
        self._runner = value

    def targets(self, target: str) -> list[str]:
        """Lever ids for `--run TARGET` as things stand now: an id, `next`, `ready` (ready and stale, in
        dependency order) or `stale`. A group run re-reads the state after each run: see `pick`."""
        if target == "next":
            nxt = self.held.machine.next()
            return [nxt] if nxt else []
        if target in ("ready", "stale"):
            return self.held.machine.runnable(("stale",) if target == "stale" else ("ready", "stale"))
        if target == "watch":
            return self.watchable()
        self.held.lever(target)
        return [target]

    def watchable(self) -> list[str]:
        """What `--run watch` re-checks, in dependency order: every adopted lever with a command, not unavailable
        on this device, whose code is not the baseline's already (a merged branch), adopted on this testbed
        (watch_refusals says the others)."""
        machine = self.held.machine
        return machine.in_order(lid for lid, m in machine.models.items() if m.outcome == "adopt" and m.lever.run
                                and not m.landed and m.unavailable is None and m.state != "running"
                                and self.watch_refusal(lid) is None)

    def pick(self, target: str, done: Collection[str] = ()) -> str | None:
        """The next lever of group `target` from the current state, skipping those in `done`: a run may
        make others ready or stale, and no lever runs twice in one invocation."""
        return next((lid for lid in self.targets(target) if lid not in done), None)

