"""Records as types (issue 41, point 1): every record the real CLI and API write reads back from the store decoded
once into its frozen Struct (state/record_types.py), its words the enums of state/kinds.py; a record an older optseq
wrote, lacking the fields added since, reads those as none; keys no reader names stay in the store's record."""
from __future__ import annotations

import json

import msgspec
import pytest

from optseq.state.kinds import RunStatus
from optseq.state.store.store import Store
from optseq.state.record_types import TYPES, UNSET, Criterion, Decision, Event, Fact, Run, decode
from tests.state.lifecycle.test_lifecycle import cli


@pytest.fixture
def written(cli_env, db):
    """A store the real CLI wrote: a fact, a criterion (and the decision and events it derives), a hand decision,
    a plan event, then a lever run and its end through the API as a run's process writes them."""
    from optseq.state.sequencer import Sequencer

    cli(cli_env, "fact", "eval_dense", "true")
    cli(cli_env, "record", "julia_port", "torch_jl", "c4", "pass", "--evidence", "1.1x of PyTorch")
    cli(cli_env, "plan", "port", "docs/plans/port.md", "--missing-ok")
    cli(cli_env, "decide", "port", "adopt", "--why", "the port is done and merged")
    with Sequencer.open(cli_env["OPTSEQ_PLAN"], db, mode="write") as seq:
        with seq.writer.writing():
            run = seq.writer.append("runs", {"lever": "option_a", "status": "running", "argv": ["true"], "passes": 0,
                                      "runner": "local"})
        with seq.writer.writing():
            seq.store.update("runs", run["id"], {"status": "failed", "exit_code": 1, "detail": "exit 1"})
    return db


def test_every_record_written_reads_back_as_its_type(written):
    with Store.open(written, mode="read") as store:
        for table, kind in TYPES.items():
            stored, typed = store.all(table), list(store.typed(table))
            assert stored and len(typed) == len(stored), table
            for record, read in zip(stored, typed):
                assert type(read) is kind and (read.id, read.seq, read.at) == (record["id"], record["seq"],
                                                                                record["at"])
                for field in read.__struct_fields__:  # what the record holds, the type gives by name
                    if field in record:
                        assert getattr(read, field) == record[field], (table, field)
        fact = next(f for f in store.typed("facts") if isinstance(f, Fact) and f.name == "eval_dense")
        assert fact.value is True
        criterion = next(iter(store.typed("criteria")))
        assert isinstance(criterion, Criterion)
        assert (criterion.lever, criterion.candidate, criterion.outcome, criterion.evidence) == \
            ("julia_port", "torch_jl", "pass", "1.1x of PyTorch")
        decisions = [d for d in store.typed("decisions") if isinstance(d, Decision)]
        assert ("port", "adopt", "the port is done and merged") in {(d.lever, d.outcome, d.why) for d in decisions}
        assert any(isinstance(e, Event) and e.type == "plan" and e.lever == "port" for e in store.typed("events"))
        run = [r for r in store.typed("runs") if isinstance(r, Run)][-1]
        # the run's status is the enum's member, its end's fields read as the update set them
        assert run.status is RunStatus.FAILED and run.lever == "option_a" and run.detail == "exit 1"


def test_a_record_of_an_older_optseq_reads_its_missing_fields_as_none():
    old = decode("runs", {"id": 3, "lever": "amp", "status": "succeeded", "summary": "2 passes"})
    assert isinstance(old, Run)
    assert (old.testbed, old.fingerprint, old.seq, old.watch) == (None, None, None, None)
    # a verdict absent (a run from before runs carried one: its summary says it) is told from one stored null
    assert old.verdict is UNSET and decode("runs", {"status": "failed", "verdict": None}).verdict is None
    assert old.summary == "2 passes" and old.status == "succeeded"  # a string summary, as the schema allows
    # a criterion without evidence reads "" (as the lever machine kept it), a null one None
    assert decode("criteria", {"lever": "l", "candidate": "c", "criterion": "k", "outcome": "fail"}).evidence == ""
    assert decode("criteria", {"lever": "l", "candidate": "c", "criterion": "k", "outcome": "fail",
                               "evidence": None}).evidence is None


def test_keys_no_reader_names_stay_in_the_store_not_on_the_type(written):
    newer = {"id": 9, "lever": "amp", "status": "running", "a_newer_field": {"x": 1}}
    run = decode("runs", newer)
    assert not hasattr(run, "a_newer_field") and run.status is RunStatus.RUNNING
    with Store.open(written, mode="read") as store:
        stored = store.all("runs")[-1]
        assert "argv" in stored and "argv" not in Run.__struct_fields__  # the run's argv: the store's, not a reader's


def test_a_typed_record_is_frozen_and_its_refusal_names_the_field():
    run = decode("runs", {"id": 1, "status": "queued"})
    with pytest.raises(AttributeError):
        run.status = RunStatus.FAILED  # type: ignore[misc]  # the point: a frozen Struct refuses it
    with pytest.raises(msgspec.ValidationError, match=r"\$\.status"):
        decode("runs", {"id": 1, "status": "sideways"})  # never stored: the store refuses it first



@pytest.mark.parametrize("verdict, outcome", [({}, None), ({"verdict": None}, "adopt")], ids=["absent", "null"])
def test_a_run_an_older_optseq_wrote_without_a_verdict_reads_it_from_its_summary(cli_env, db, verdict, outcome):
    """A lever's re-measure from before runs carried a top-level `verdict` (its summary's rule said it) is read as
    then: inconclusive, it takes the standing adopt out of the stack; a run that stored its verdict null has none,
    and moves no decision. Written as that optseq wrote it, straight to the store; the next command reads it."""
    cli(cli_env, "decide", "cython_bot", "adopt", "--why", "measured by hand")
    with Store.open(db, mode="write") as store:
        with store.batch():
            store.append("runs", {"lever": "cython_bot", "status": "succeeded", "argv": ["true"], "passes": 2,
                                  "summary": {"verdict": {"outcome": "inconclusive", "reason": "CI spans 1"}},
                                  **verdict})
    levers = {lever["id"]: lever for lever in json.loads(cli(cli_env, "status", "--json").stdout)["levers"]}
    assert (levers["cython_bot"]["state"], levers["cython_bot"]["outcome"]) == ("measured", outcome)
