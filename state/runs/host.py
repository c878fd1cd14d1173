"""What a run needs of the plan's state, and all it may do to it: the typed interface runs/ is given.

state/runs/ sits below the sequencer: a lever's run, a compare, a screen take a `RunHost` (the sequencer builds one,
state/run_host.py) and never the Sequencer itself, so nothing here calls it back. The host reads the plan, the lever
machine and the store for a run; it records a run, updates it, holds a lever, and ends a run (the lever moved as its
final record moves it on replay, a decision, a criterion, the stack's staleness marks), each inside `writing()`.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from optseq.state.lifecycle.run_index import KeptCompare, KeptRun
from optseq.state.plan.model import Lever, Plan
from optseq.state.record_types import Run
from optseq.state.store.rows import Active

Record = dict[str, Any]
"""A run record (or the fields of its update) as the store keeps it."""


class RunReads(Protocol):
    """What a run reads of the run index (lifecycle/run_index.py)."""

    @property
    def recent(self) -> Mapping[str, Sequence[KeptRun]]:
        """lever -> its newest finished runs, oldest first."""

    @property
    def compares(self) -> Sequence[KeptCompare]:
        """The newest compares, oldest first."""


class MachineReads(Protocol):
    """What a run reads of the lever machine (lifecycle/machine.py): the stack it is measured on, the levers a
    screen may take; never a move (those go through the host)."""

    @property
    def runs(self) -> RunReads: ...

    def infra(self) -> dict: ...

    def stack_order(self) -> list[str]: ...

    def adoption_order(self) -> list[str]: ...

    def unmerged(self, lever_id: str) -> dict | None: ...

    def runnable(self, states: tuple[str, ...] = ...) -> list[str]: ...


class Held(Protocol):
    """A lever's run lock, held by this process until released."""

    def release(self) -> None: ...


class Runner(Protocol):
    """Where a run's passes are launched (state/runners/): its name is kept on the run record."""

    @property
    def name(self) -> str: ...


class RunHost(Protocol):
    """What runs/ is given instead of the Sequencer (state/run_host.py implements it)."""

    # -- what a run reads ----------------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan: ...

    @property
    def machine(self) -> MachineReads: ...

    def lever(self, lever_id: str) -> Lever:
        """The plan's lever; InputError (one line, naming the plan's levers) for an unknown id."""

    @property
    def testbed(self) -> dict:
        """{id, name, parts} of the machine this process measures on; InputError for an OPTSEQ_TESTBED that names
        no testbed."""

    @property
    def runner(self) -> Runner:
        """Where this process launches runs; RunnerError where it cannot be set up."""

    @property
    def store_tag(self) -> str:
        """The store's tag on every launch (runners.interface.store_tag): what finds a launch again."""

    def record(self, run_id: int) -> Record:
        """The run's record as stored ({} for none)."""

    def run(self, run_id: int) -> Run:
        """The run's record as its type (state/record_types.py): what a run reads of it by name (every field None
        for none)."""

    def run_dir(self, run_id: int) -> Path:
        """The run's folder (made if missing): its passes' logs, samples and artifacts."""

    def detached_runs(self) -> list[Active]:
        """Runs on a cluster whose optseq is gone (a lever and a submission id each)."""

    def check_writable(self, doing: str) -> None:
        """InputError, naming the store, where it is read-only here; `doing` says what needed it."""

    def check_runnable(self, lever_id: str) -> None:
        """InputError (one line) for a lever that cannot run now, as the state every process left it says."""

    def check_watchable(self, lever_id: str) -> None:
        """InputError (one line) for a lever a watch cannot re-check."""

    def watchable(self) -> list[str]:
        """The levers `--run watch` re-checks, in dependency order."""

    def pick(self, target: str, done: Collection[str] = ()) -> str | None:
        """The next lever of a group run (`ready`, `stale`, `watch`) as things stand, skipping `done`."""

    # -- what a run does -----------------------------------------------------------------------------------------
    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held around every read of the state a run makes while other threads (the console, other runs) may
        write; reentrant."""

    def writing(self) -> AbstractContextManager[None]:
        """One store transaction (under `lock`): catch up with other processes, write, keep the snapshot."""

    def hold(self, lever_id: str) -> Held:
        """The lever's run lock for this process; InputError naming the optseq that holds it elsewhere."""

    def append_run(self, fields: Record) -> Record:
        """A new run record (in `writing()`); returns it with its id."""

    def update(self, run_id: int, fields: Record) -> None:
        """The run's record updated (in `writing()`), and its row in the index the views read where it has one
        there before it ends (a compare's, a screen's)."""

    def end_run(self, lever_id: str, status: str, verdict: str | None, record: Record) -> None:
        """A run's final record (`record`, with its id) is written: the lever moves as that record moves it on
        replay, and the plan's decision points on it fire."""

    def decide(self, lever_id: str, outcome: str, *, why: str, rule: str, runs: Sequence[int],
               stats: dict | None = None, config: dict | None = None, why_said: dict | None = None,
               source: str | None = None) -> None:
        """A decision the run came to by its rule; InputError where the lever cannot take it now."""

    def record_criterion(self, lever_id: str, event: Mapping[str, Any]) -> None:
        """A criterion event a decision lever's run reported (candidate, criterion, outcome, evidence, as its
        command printed them); InputError where it is refused."""

    def mark_stack_changes(self, run_id: int, fingerprint: dict, testbed: dict | None) -> None:
        """Numbers measured on another device or torch than this run's go stale."""
