"""The change-point bench (`python -m optseq.state.bench.change_points`): seeded, so the same command writes the
same section; its rows come from real pass-loop runs, and on a small draw the detector's figures hold."""
from __future__ import annotations

import random

from optseq.state.bench import change_points as bench


def test_the_same_command_writes_the_same_section(tmp_path, capsys):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nkept\n", encoding="utf-8")
    argv = ["--histories", "20", "--pool", "60", "--write", str(doc)]
    assert bench.main(argv) == 0
    first = doc.read_text(encoding="utf-8")
    assert bench.main(argv) == 0
    assert doc.read_text(encoding="utf-8") == first
    assert first.startswith("# Performance\n\nkept\n")
    assert "Written by `python -m optseq.state.bench.change_points --histories 20 --pool 60 --write" in first
    assert first.count("<!-- section:change-points -->") == 1
    rows = [line for line in first.splitlines() if line.startswith("| launch sd") or line.startswith("| 10%")]
    assert len(rows) == len(bench.PROFILES) * len(bench.STEPS)


def test_a_real_run_has_an_interval_and_the_detector_holds_on_a_small_draw():
    estimate, low, high = bench.real_run(1.3, bench.PROFILES[0].noise, random.Random(1))
    assert low < estimate < high and abs(estimate / 1.3 - 1) < 0.05
    quiet = bench.PROFILES[0]
    rows = bench.measure(quiet, bench.pools(quiet, 60), 20)
    none, *steps = rows
    assert none.other["optseq"] <= 1  # of 20 histories without a change
    assert all(r.found["optseq"] >= 18 for r in steps if r.step >= 0.2)
    # the library's defaults report changes where there are none: what the weighing and the penalty are for
    assert none.other["ruptures defaults"] > none.other["optseq"]
