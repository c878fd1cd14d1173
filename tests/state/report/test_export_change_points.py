"""The export's change points: one line per lever whose kept runs changed level, in both languages, naming the
commits around it; none for a history without a step. Stores built through the real API (stepped_history.py)."""
from __future__ import annotations

import datetime as dt

import pytest

from optseq.state.sequencer import Sequencer
from tests.state.stepped_history import build

pytestmark = pytest.mark.slow
TODAY = dt.date(2026, 12, 5)


def test_a_lever_that_changed_gets_one_line(tmp_path):
    plan, commits = build(tmp_path / "repo", tmp_path / "db", [1.5] * 4 + [1.25] * 4)
    old, new = commits[3][:7], commits[4][:7]
    with Sequencer.open(plan, tmp_path / "db", mode="read") as seq:
        en, ko = seq.views.export("en", TODAY), seq.views.export("ko", TODAY)
    lines = [line for line in en.splitlines() if "change at run" in line]
    assert len(lines) == 1
    assert lines[0].startswith("- A lever: change at run 5: 1.")
    assert lines[0].endswith(f", between commits {old}..{new} (`git log {old}..{new}`)")
    assert "### Change points" in en and "never a decision" in en
    (line,) = [line for line in ko.splitlines() if "run 5에서 변화" in line]
    assert line.endswith(f", 커밋 {old}..{new} 사이 (`git log {old}..{new}`)") and "### 변화 지점" in ko


def test_a_history_without_a_step_gets_none(tmp_path):
    plan, _ = build(tmp_path / "repo", tmp_path / "db", [1.5] * 6)
    with Sequencer.open(plan, tmp_path / "db", mode="read") as seq:
        text = seq.views.export("en", TODAY)
    assert "Change points" not in text and "change at run" not in text
