"""The sequencer on the default plan over a real on-disk store: the seed's scenarios."""
from __future__ import annotations

import pytest

from optseq.state.errors import InputError
from optseq.state.sequencer import Sequencer


@pytest.fixture
def seq(plan_path, db):
    with Sequencer.open(plan_path, db, mode="write") as s:
        yield s


def states(seq) -> dict[str, str]:
    return {v.id: v.state for v in seq.views.lever_views()}


def test_fresh_plan_matches_the_seed(seq):
    st = states(seq)
    assert st["julia_port"] == "ready"
    assert st["cython_bot"] == "adopted"
    assert all(st[l] == "blocked" for l in ("port", "option_b", "model_size", "amp", "compile",
                                            "tensorrt", "option_a"))
    status = seq.views.status()  # nothing can run until julia_port's last criterion is recorded: the to-do says so
    assert seq.machine.next() is None and status.next is None
    assert status.todo == ["julia_port: record criteria (torch_jl c4 pending)"]
    why = {v.id: v.why_blocked for v in seq.views.lever_views()}
    assert any("julia_port" in r and "NO-GO" in r for r in why["option_b"])
    assert any("plan not written" in r for r in why["option_b"])
    assert any("eval_dense" in r for r in why["tensorrt"])
    assert why["option_a"][0].startswith("needs one of:")


def test_last_criterion_fail_decides_no_go(seq):
    messages = seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail", "0.8x of PyTorch")
    assert any("NO-GO automatically" in m for m in messages)
    st = states(seq)
    assert st["julia_port"] == "decided" and seq.machine.models["julia_port"].outcome == "NO-GO"
    assert st["port"] == "closed"
    assert st["option_b"] == "unplanned"
    decision = seq.views.history("julia_port")["decisions"][-1]
    assert decision["auto"] is True and decision["rule"] == "criteria"
    fired = {p.id: p.fired for p in seq.views.status().decision_points}
    assert fired["torch_jl_result"] is not None and fired["model_size_results"] is None


def test_last_criterion_pass_decides_go(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "pass")
    st = states(seq)
    assert seq.machine.models["julia_port"].outcome == "GO"
    assert st["port"] == "unplanned"  # opened; its plan is not written yet
    assert st["option_b"] == "blocked"


def test_plan_written_makes_option_b_next(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    assert seq.views.status().next is None
    assert seq.views.status().todo == ["option_b: write its plan (optseq plan option_b PATH)"]
    seq.actions.write_plan("option_b", "docs/plans/option_b.md")
    assert states(seq)["option_b"] == "ready"
    assert seq.views.status().next == "option_b" and seq.views.status().todo == []
    assert seq.views.status().levers[3].plan_doc == "docs/plans/option_b.md"


def test_state_survives_reopening(plan_path, db):
    with Sequencer.open(plan_path, db, mode="write") as s:
        s.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
        s.actions.write_plan("option_b", "docs/plans/option_b.md")
        before = s.views.status()
    with Sequencer.open(plan_path, db, mode="write") as s:
        after = s.views.status()
    assert [(l.id, l.state, l.outcome) for l in before.levers] == [(l.id, l.state, l.outcome) for l in after.levers]
    assert after.next == "option_b"


def test_snapshot_table_follows_the_machine(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    snapshot = {r["lever"]: r["state"] for r in seq.store.all("levers")}
    assert snapshot == states(seq)


def test_fact_opens_tensorrt_gate(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    seq.actions.write_plan("option_b", "p.md")
    seq.actions.decide("option_b", "adopt", "measured 1.4x")
    seq.actions.decide("model_size", "h1024x6", "best exploitability per hour", unmeasured=True)
    assert states(seq)["tensorrt"] == "blocked"
    seq.actions.set_fact("eval_dense", True)
    assert states(seq)["tensorrt"] == "unplanned"
    seq.actions.set_fact("eval_dense", False)
    assert states(seq)["tensorrt"] == "blocked"


def test_manual_decision_needs_a_rationale_and_supersedes(seq):
    with pytest.raises(InputError, match="rationale"):
        seq.actions.decide("amp", "adopt", "  ")
    seq.actions.decide("amp", "adopt", "small-model measurement")
    seq.actions.decide("amp", "reject", "re-read the numbers")
    decisions = seq.views.history("amp")["decisions"]
    assert [d["outcome"] for d in decisions] == ["adopt", "reject"]
    assert decisions[0]["superseded"] is True and decisions[1]["superseded"] is False
    assert states(seq)["amp"] == "rejected"


def test_model_size_decision_makes_adopted_amp_stale(seq):
    seq.actions.decide("amp", "adopt", "measured earlier on the small model")
    seq.actions.decide("model_size", "h1024x6", "bigger model chosen", unmeasured=True)
    view = next(v for v in seq.views.lever_views() if v.id == "amp")
    assert view.state == "stale" and view.stale is True
    assert "model_size" in view.stale_reason
    # amp goes before compile, whose numbers a new amp decision would make stale again
    assert seq.lever_runs.targets("stale") == ["amp"]
    assert seq.lever_runs.targets("ready").index("amp") < seq.lever_runs.targets("ready").index("compile")


@pytest.mark.parametrize("args, fragment", [
    (("nope", "torch_jl", "c4", "fail"), "unknown lever 'nope'"),
    (("julia_port", "pytorch", "c4", "fail"), "unknown candidate 'pytorch'"),
    (("julia_port", "torch_jl", "c9", "fail"), "unknown criterion 'c9'"),
    (("amp", "torch_jl", "c4", "fail"), "only decision levers have criteria"),
])
def test_bad_criterion_input_is_refused_without_writing(seq, args, fragment):
    before = len(seq.store.all("criteria"))
    with pytest.raises(InputError, match=fragment):
        seq.actions.record_criterion(*args)
    assert len(seq.store.all("criteria")) == before


def test_decided_lever_takes_no_more_criteria(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    with pytest.raises(InputError, match="already decided NO-GO"):
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "pass")


def test_unknown_outcome_and_fact_are_refused(seq):
    with pytest.raises(InputError, match="unknown outcome 'GO'"):
        seq.actions.decide("amp", "GO", "x")
    with pytest.raises(InputError, match="unknown fact 'dense'"):
        seq.actions.set_fact("dense", True)


def test_two_openers_both_write_and_each_sees_the_others_writes(seq, plan_path, db):
    with Sequencer.open(plan_path, db, mode="auto") as other:
        assert not other.readonly
        assert other.views.status().todo == ["julia_port: record criteria (torch_jl c4 pending)"]
        other.actions.set_fact("eval_dense", True)
        assert seq.follower.reload() and seq.views.status().facts["eval_dense"] is True
        # a write catches up first: the gate decided here is known to the other opener's next write
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
        other.actions.write_plan("option_b", "docs/plans/option_b.md")
        assert other.machine.state("julia_port") == "decided" and other.machine.state("option_b") == "ready"
    assert seq.follower.reload() and seq.machine.state("option_b") == "ready"


def test_a_read_opener_cannot_write(seq, plan_path, db):
    with Sequencer.open(plan_path, db, mode="read") as reader:
        assert reader.readonly
        with pytest.raises(InputError, match="read-only"):
            reader.actions.set_fact("eval_dense", True)


def test_a_snapshot_and_a_full_replay_agree(seq, plan_path, db):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    seq.actions.write_plan("option_b", "docs/plans/option_b.md")
    seq.actions.decide("option_b", "adopt", "1.4x")
    seq.actions.decide("model_size", "h32x2", "cheap", unmeasured=True)
    seq.actions.decide("amp", "adopt", "1.2x")
    seq.actions.decide("model_size", "h64x3", "bigger after all", unmeasured=True)
    with Sequencer.open(plan_path, db, mode="read") as fresh:
        assert fresh.store.snapshot() is not None
        from_snapshot = fresh.views.status()
        fresh.held.machine = fresh.follower.replay()  # the whole history, as a store without a snapshot would
        assert fresh.views.status() == from_snapshot
    assert from_snapshot.levers == seq.views.status().levers


def test_deciding_a_gate_again_the_same_way_reopens_nothing(seq):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    seq.actions.decide("julia_port", "NO-GO", "confirmed by hand")
    assert states(seq)["port"] == "closed" and states(seq)["option_b"] == "unplanned"
    first, second = seq.views.history("julia_port")["decisions"]
    assert first["superseded"] is True and second["supersedes"] == first["id"]


def test_a_reversal_closes_what_stood_on_the_old_branch(seq, plan_path, db):
    seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail")
    seq.actions.write_plan("option_b", "docs/plans/option_b.md")
    seq.actions.decide("option_b", "adopt", "1.4x")
    seq.actions.decide("model_size", "h1024x6", "bigger", unmeasured=True)
    seq.actions.decide("amp", "adopt", "1.2x")
    seq.actions.decide("julia_port", "GO", "Torch.jl re-run passes c4")
    st = states(seq)
    # option_b's gate needs NO-GO; model_size and amp stood on option_b, and close with it
    assert [st[l] for l in ("option_b", "model_size", "amp", "compile", "option_a")] == ["closed"] * 5
    assert st["tensorrt"] == "blocked"  # it never opened (eval_dense was never set)
    assert st["port"] == "unplanned"
    assert seq.machine.infra() == {"adopted": ["cython_bot"], "model": {}}
    view = {v.id: v for v in seq.views.lever_views()}
    assert view["option_b"].why_blocked == ["closed: julia_port decided GO"]
    assert view["model_size"].why_blocked[0].startswith("closed: julia_port decided GO (option_b ")
    assert all(d["superseded"] for lever in ("option_b", "model_size", "amp")
               for d in seq.views.history(lever)["decisions"])
    with Sequencer.open(plan_path, db, mode="read") as again:
        assert states(again) == st
    seq.actions.decide("julia_port", "NO-GO", "back again")
    st = states(seq)
    assert st["option_b"] == "ready" and st["model_size"] == st["amp"] == "blocked" and st["port"] == "closed"
