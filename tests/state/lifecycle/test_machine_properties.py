"""The lever machine under random sequences of what users do (hypothesis drives the real Sequencer on the seed's plan
and a real store): criteria, facts, manual decisions and reopening, in any order. After every step the machine's
invariants hold, a refused action writes nothing, and a fresh reader replaying the store sees the very states the
live machine holds: derived state is a function of the records alone."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule  # noqa: E402

from optseq.state.errors import InputError  # noqa: E402
from optseq.state.lifecycle.states import STATES  # noqa: E402
from optseq.state.plan import loader  # noqa: E402
from optseq.state.sequencer import Sequencer  # noqa: E402

PLAN = Path(__file__).resolve().parents[3] / "configs" / "sequencing.toml"
SEED = loader.load(PLAN)
LEVERS = [lever.id for lever in SEED.levers]
GATES = [(lever.id, lever.criteria) for lever in SEED.levers if lever.criteria is not None]
FACTS = sorted(SEED.facts)
OUTCOMES = sorted({o for lever in SEED.levers for o in lever.outcomes} | {"adopt", "reject", "GO", "NO-GO"})


class LeverMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="optseq-props-"))
        self.db = self.folder / "db"
        self.seq = Sequencer.open(PLAN, self.db, mode="write")
        self.refused = 0

    def teardown(self) -> None:
        self.seq.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _ends(self) -> dict:
        return dict(self.seq.store.ends())

    def _act(self, action) -> None:
        before = self._ends()
        try:
            action()
        except InputError:
            self.refused += 1
            assert self._ends() == before, "a refused action wrote to the store"

    @rule(gate=st.sampled_from(GATES), candidate=st.integers(0, 9), criterion=st.integers(0, 9),
          outcome=st.sampled_from(["pass", "fail"]))
    def criterion(self, gate, candidate, criterion, outcome):
        lever, criteria = gate
        cand = criteria.candidates[candidate % len(criteria.candidates)].id
        crit = criteria.criteria[criterion % len(criteria.criteria)].id
        self._act(lambda: self.seq.actions.record_criterion(lever, cand, crit, outcome, evidence="a property test"))

    @rule(name=st.sampled_from(FACTS), value=st.booleans())
    def fact(self, name, value):
        self._act(lambda: self.seq.actions.set_fact(name, value))

    @rule(lever=st.sampled_from(LEVERS), outcome=st.sampled_from(OUTCOMES), unmeasured=st.booleans())
    def decide(self, lever, outcome, unmeasured):
        self._act(lambda: self.seq.actions.decide(lever, outcome, "decided by a property test", unmeasured=unmeasured))

    @rule()
    def reopen(self):
        self.seq.close()
        self.seq = Sequencer.open(PLAN, self.db, mode="write")

    @invariant()
    def states_are_the_machines(self):
        for lever in LEVERS:
            assert self.seq.machine.state(lever) in STATES

    @invariant()
    def next_is_a_lever_a_run_may_start(self):
        # `next` is the first lever a group run may start (Standing.runnable): a ready one, or a stale one to
        # measure again, with a command to run
        found = self.seq.machine.next()
        assert found is None or self.seq.machine.state(found) in ("ready", "stale"), found
        assert found is None or self.seq.plan.lever(found).run, found

    @invariant()
    def a_fresh_reader_derives_the_same_states(self):
        if not self.db.exists():
            return
        live = {lever: self.seq.machine.state(lever) for lever in LEVERS}
        fresh = Sequencer.open(PLAN, self.db, mode="read")
        try:
            assert {lever: fresh.machine.state(lever) for lever in LEVERS} == live
            assert fresh.machine.next() == self.seq.machine.next()
        finally:
            fresh.close()


LeverMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None,
                                          suppress_health_check=list(HealthCheck), derandomize=True,
                                          database=None)
test_the_lever_machine_under_random_actions = LeverMachine.TestCase
