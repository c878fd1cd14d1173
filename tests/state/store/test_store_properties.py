"""The store under random sequences of writes (hypothesis drives a real store in a temporary folder): appends to
every history table, updates, upserts, batches that fail part-way, reopening, and losing the hot file and
rebuilding it from the journals. After every step the store reads back exactly what was written and committed,
ids count up from 1 in each table, and a batch that raised left nothing behind."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule  # noqa: E402

from optseq.state.store import doctor  # noqa: E402
from optseq.state.store.layout import DB_NAME  # noqa: E402
from optseq.state.store.store import Store  # noqa: E402

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
LEVERS = st.sampled_from(["amp", "compile", "option_a", "julia_port"])
RECORDS = {
    "runs": st.fixed_dictionaries({"lever": LEVERS, "status": st.sampled_from(["succeeded", "failed", "cancelled"]),
                                   "argv": st.lists(TEXT, max_size=3), "note": TEXT}),
    "decisions": st.fixed_dictionaries({"lever": LEVERS, "outcome": st.sampled_from(["adopt", "reject", "defer"]),
                                        "auto": st.booleans(), "why": TEXT}),
    "criteria": st.fixed_dictionaries({"lever": LEVERS, "candidate": st.sampled_from(["flux", "torch_jl"]),
                                       "criterion": st.sampled_from(["c1", "c2"]),
                                       "outcome": st.sampled_from(["pass", "fail"]), "evidence": TEXT}),
    "events": st.fixed_dictionaries({"type": st.sampled_from(["note", "point"]), "lever": LEVERS, "text": TEXT}),
}


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="optseq-store-props-"))
        self.db = self.folder / "db"
        self.store = Store.open(self.db, mode="write")
        self.model: dict[str, dict[int, dict]] = {table: {} for table in (*RECORDS, "facts")}

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(data=st.data(), table=st.sampled_from(sorted(RECORDS)))
    def append(self, data, table):
        record = data.draw(RECORDS[table])
        stored = self.store.append(table, record)
        assert stored["id"] == len(self.model[table]) + 1
        self.model[table][stored["id"]] = record

    @precondition(lambda self: self.model["runs"])
    @rule(data=st.data(), status=st.sampled_from(["succeeded", "failed", "interrupted"]), note=TEXT)
    def update_a_run(self, data, status, note):
        run = data.draw(st.sampled_from(sorted(self.model["runs"])))
        self.store.update("runs", run, {"status": status, "note": note})
        self.model["runs"][run] = {**self.model["runs"][run], "status": status, "note": note}

    @rule(name=st.sampled_from(["eval_dense", "gpu_budget", "x"]), value=st.booleans())
    def upsert_a_fact(self, name, value):
        stored = self.store.upsert("facts", "name", {"name": name, "value": value})
        self.model["facts"][stored["id"]] = {"name": name, "value": value}

    @rule(data=st.data(), table=st.sampled_from(sorted(RECORDS)), count=st.integers(1, 3))
    def a_batch_that_fails_writes_nothing(self, data, table, count):
        with pytest.raises(RuntimeError):
            with self.store.batch():
                for _ in range(count):
                    self.store.append(table, data.draw(RECORDS[table]))
                raise RuntimeError("the caller failed part-way")

    @rule()
    def reopen(self):
        self.store.close()
        self.store = Store.open(self.db, mode="write")

    @precondition(lambda self: any(self.model.values()))  # an empty store has nothing to rebuild from (refused)
    @rule()
    def lose_the_hot_file_and_rebuild(self):
        self.store.close()
        (self.db / DB_NAME).unlink()
        doctor.rebuild(self.db)
        self.store = Store.open(self.db, mode="write")

    @invariant()
    def reads_back_what_was_committed(self):
        for table, records in self.model.items():
            stored = {r["id"]: r for r in self.store.all(table)}
            assert sorted(stored) == sorted(records), table
            for rid, written in records.items():
                assert {k: stored[rid].get(k) for k in written} == written, (table, rid)

    @invariant()
    def a_reader_sees_the_same(self):
        if not (self.db / DB_NAME).exists():
            return
        reader = Store.open(self.db, mode="read")
        try:
            for table in self.model:
                assert reader.all(table) == self.store.all(table), table
        finally:
            reader.close()


StoreMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=20, deadline=None,
                                          suppress_health_check=list(HealthCheck), derandomize=True,
                                          database=None)
test_the_store_under_random_writes = StoreMachine.TestCase
