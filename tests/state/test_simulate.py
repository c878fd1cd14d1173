"""The decision-quality guarantee, held over thousands of seeded draws through the real pass loop."""
from __future__ import annotations

import subprocess
import sys

import pytest

from optseq.state.bench import simulate
from optseq.state.runs.sequential import ALPHA

NOISE = {label: (label, sigma, outliers) for label, sigma, outliers in simulate.NOISES}


@pytest.mark.parametrize("repeats, noise", [(3, "2%"), (5, "10%"), (8, "5%, 1 in 10 samples 1.5× slow")])
def test_at_the_threshold_false_adopts_stay_within_five_percent(repeats, noise):
    row = simulate.simulate("threshold", simulate.THRESHOLD, repeats, NOISE[noise], draws=3000)
    assert row.adopt / row.draws <= ALPHA
    assert row.pairs / row.draws > repeats  # undecided draws went on to later looks: the bound covers them


def test_an_aa_lever_is_never_adopted_and_mostly_rejected():
    row = simulate.simulate("A/A", 1.0, 5, NOISE["5%"], draws=1000)
    assert row.adopt == 0 and row.reject / row.draws > 0.95


def test_power_at_ten_percent_above_the_threshold():
    row = simulate.simulate("threshold × 1.1", simulate.THRESHOLD * 1.1, 8, NOISE["5%"], draws=1000)
    assert row.adopt / row.draws >= 0.95 and row.mean_pairs < 16


def test_the_command_writes_its_section_and_keeps_the_others(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n", encoding="utf-8")
    for _ in range(2):  # a second write replaces the section instead of adding one
        out = subprocess.run([sys.executable, "-m", "optseq.state.bench.simulate", "--draws", "20", "--write", str(doc)],
                             capture_output=True, text=True, timeout=1800, check=True)
        assert out.stdout.strip() == f"wrote {doc}"
    text = doc.read_text(encoding="utf-8")
    assert "bench figures" in text and text.count("<!-- section:decisions -->") == 1
    assert "| threshold (1.1×) | 3 → 12 | 2% |" in text and "Worst false-adopt rate at the threshold" in text
    assert not (tmp_path / "performance.md.tmp").exists()
