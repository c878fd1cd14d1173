"""Wrong shapes said as the field they are in (state/store/shape_check.py), found from the schema's types part by
part, never from msgspec's wording: a dict's key by name (msgspec says `[...]`), a list's item by index, a missing
field, an enum's allowed values."""
from __future__ import annotations

from optseq.state.store.shape_check import line_problem, record_problem, refuse_written
from optseq.state.store.shapes import SNAPSHOT_VERSION, SnapshotData
from optseq.state.store import shape_check


def test_a_field_of_a_record_is_named_with_what_is_wrong():
    assert record_problem("runs", {"lever": "amp", "status": "running", "pid": "12"}) == \
        ("pid", "expected `int | null`, got `str`")
    assert record_problem("runs", {"lever": "amp", "status": "bogus"}) == \
        ("status", "invalid enum value 'bogus' (one of running, queued, succeeded, failed, cancelled, interrupted, "
                   "unavailable, timeout)")


def test_a_dicts_key_is_named_even_with_dots_and_brackets_in_it():
    data = {"version": SNAPSHOT_VERSION, "levers": {"ok": {"state": "ready"}, "a.b[0]": {"state": "sideways"}}}
    field, problem = shape_check._problem(data, SnapshotData, "data")
    assert field == "data.levers.a.b[0].state"
    assert problem.startswith("invalid enum value 'sideways' (one of unplanned, blocked, ready")


def test_a_list_item_and_a_missing_field_deep_in_a_hot_row_are_named():
    row = {"table": "decisions", "keys": {"amp": {"n": 1, "last": [{"lever": "amp"}, "no record"]}}}
    assert shape_check._problem(row, shape_check.HOT["recent"]) == \
        ("keys.amp.last[1]", "expected `object`, got `str`")
    assert shape_check._problem({"table": "decisions", "keys": {"amp": {"last": []}}}, shape_check.HOT["recent"]) \
        == ("keys.amp.n", "missing")


def test_the_first_wrong_field_in_the_records_order_is_the_one_said():
    record = {"lever": "amp", "status": "running", "pgid": "x", "pid": "y"}
    assert record_problem("runs", record)[0] == "pgid"


def test_a_journal_line_says_its_record_and_field():
    line = {"op": "i", "id": 7, "seq": 3, "at": "", "r": {"lever": "amp", "status": "running", "testbed": {}}}
    assert line_problem("runs", line) == "record 7 of runs, field `r.testbed.name`: missing"


def test_a_wrong_write_is_refused_naming_its_field():
    try:
        refuse_written("runs", {"lever": "amp", "status": "running", "argv": ["ok", 3]})
    except ValueError as exc:
        assert str(exc) == "a record for 'runs' has the wrong shape: field `argv[1]`: expected `str`, got `int`"
    else:
        raise AssertionError("refused nothing")
