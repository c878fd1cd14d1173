"""The decision-quality guarantee, held over seeded draws through the real pass loop, on benches that behave like
real ones: launches with their own speed, warm-up and drift under each arm order, one-arm stalls, rounding."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.bench import simulate
from optseq.state.runs.sequential import BOUND

DRAWS = 1000
statistical = pytest.mark.slow  # a thousand seeded runs a test: make test runs them, make test-fast leaves them out


def setting(group: str, truth: str, noise: str = "", repeats: int = 5) -> simulate.Setting:
    found = [s for s in simulate.settings() if s.group.startswith(group) and s.truth == truth
             and s.noise.label.startswith(noise) and s.repeats == repeats]
    assert len(found) == 1, (group, truth, noise, found)
    return found[0]


@statistical
@pytest.mark.parametrize("group, noise", [
    ("iid noise", "2%"), ("iid noise", "10%"), ("per-launch offsets", "launch sd 3%"),
    ("warm-up", "alternate"), ("warm-up", "random"), ("drift: speed-up", "alternate"), ("drift: speed-up", "random"),
    ("one-arm stalls", ""), ("rounded output", ""),
])
def test_at_the_threshold_false_adopts_stay_within_five_percent(group, noise):
    row = simulate.simulate(setting(group, "threshold", noise), DRAWS)
    assert row.adopt / row.draws <= BOUND, row
    assert row.launches / row.draws > 6  # undecided draws went on to later looks: the bound covers them


@statistical
@pytest.mark.parametrize("group, noise", [("drift: throttle", "alternate"), ("per-launch offsets", "launch sd 3%")])
def test_at_the_threshold_false_rejects_stay_within_five_percent(group, noise):
    row = simulate.simulate(setting(group, "threshold", noise), DRAWS)
    assert row.reject / row.draws <= BOUND, row


@statistical
def test_launches_with_their_own_speed_do_not_pass_for_an_effect_in_an_a_a_run():
    # each launch gives the candidate its own speed (sd 1%), and every pair inside it shares that: counted as
    # independent pairs, 21% of such A/A runs adopted
    row = simulate.simulate(setting("per-launch offsets", "A/A", "launch sd 1%"), DRAWS)
    assert row.adopt / row.draws <= BOUND and row.reject / row.draws <= BOUND, row


@statistical
def test_a_candidate_whose_stalls_cost_more_than_its_median_gains_is_not_adopted_once_it_stalls():
    # the median ratio is 1.21× against a 1.1× threshold, but 2% of the candidate's calls are 5-20× slower:
    # its total time is 0.98× the baseline's. A run that met a stall never adopts; one that met none cannot know
    row = simulate.simulate(setting("one-arm stalls", "median × 1.1, total 0.98×"), DRAWS)
    assert row.met_stall > row.draws / 4 and row.adopted_after_stall == 0, row
    assert row.adopt <= row.draws - row.met_stall


def test_a_bench_that_runs_the_baseline_first_is_never_decided():
    row = simulate.simulate(setting("warm-up", "threshold", "baseline first, 1%"), 200)
    assert row.adopt == row.reject == 0, row


@pytest.mark.parametrize("truth", ["A/A", "threshold"])
def test_a_silent_bench_that_runs_the_baseline_first_is_never_decided(truth):
    # no `first` in its samples: the order they came in is taken for the order, and the baseline came first in
    # every pair; read as if the order were unknown, 44% of A/A runs and 50% at the threshold adopted (200 draws)
    row = simulate.simulate(setting("warm-up", truth, "baseline first, no `first`"), 200)
    assert row.adopt == row.reject == 0 and row.launches / row.draws == 2, row


@statistical
def test_power_at_ten_percent_above_the_threshold():
    row = simulate.simulate(setting("iid noise", "threshold × 1.1", "5%", repeats=8), DRAWS)
    assert row.adopt / row.draws >= 0.99 and row.launches / row.draws < 7, row


def test_rounded_output_is_counted_not_taken_for_a_replay():
    row = simulate.simulate(setting("rounded output", "threshold × 1.1"), 200)
    assert row.adopt / row.draws >= 0.95, row


def test_the_command_writes_its_section_and_keeps_the_others(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n", encoding="utf-8")
    for _ in range(2):  # a second write replaces the section instead of adding one
        out = subprocess.run([sys.executable, "-m", "optseq.state.bench.simulate", "--draws", "5", "--write", str(doc)],
                             capture_output=True, text=True, timeout=1800, check=True)
        assert out.stdout.strip() == f"wrote {doc}"
    text = doc.read_text(encoding="utf-8")
    assert "bench figures" in text and text.count("<!-- section:decisions -->") == 1
    assert "| per-launch offsets | threshold (1.1× vs 1.1×) | 5 | launch sd 1%, 1% per sample |" in text
    assert "Worst false-adopt rate at the threshold" in text and "pyperf 20 × 3" in text
    # the commit gate's table is the same command's, in a section of its own after the decisions
    assert text.count("<!-- section:compare -->") == 1 and text.index("section:decisions") < text.index(
        "section:compare")
    assert "| warm-up 10%, fading over ~4 runs | 5% | slower by the tolerance (1.05×) | random, 2% a run |" in text
    assert "Worst P(not slower) at a slowdown equal to the tolerance" in text and "5 draws per row" in text
    # and the screen's, beside the levers decided one at a time, at half the draws
    assert text.count("<!-- section:screen -->") == 1 and "| 8 | 64 | 2^(8-2) resolution V" in text
    assert "Worst false adopt at the threshold in a screen" in text and "2 draws per row." in text
    assert not (tmp_path / "performance.md.tmp").exists()


ROWS_DOC = Path(__file__).resolve().parents[3] / "docs" / "performance.md"
CHEAP_ROW = "drift: throttle −0.2% a call | threshold (1.1× vs 1.1×) | 5 | baseline first, 1% per sample"
"""A row whose runs stop after two launches: the cheapest to simulate at the document's 2,000 draws."""


def simulate_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optseq.state.bench.simulate", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


def test_rows_simulates_the_rows_it_names_and_keeps_the_others_as_written(tmp_path):
    # each row is seeded by its own setting: simulated alone, the row comes out as the whole table gave it
    doc = tmp_path / "docs" / "performance.md"
    doc.parent.mkdir()
    written = ROWS_DOC.read_text(encoding="utf-8")
    wrong = written.replace(f"| {CHEAP_ROW} | 0.0% | 0.0% | 100.0% |", f"| {CHEAP_ROW} | 9.9% | 0.0% | 90.1% |")
    assert wrong != written
    doc.write_text(wrong, encoding="utf-8")
    out = simulate_cli("--write", "docs/performance.md", "--rows", CHEAP_ROW, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "wrote 1 row into docs/performance.md", out.stderr
    assert doc.read_text(encoding="utf-8") == written


def test_rows_refuses_in_one_line_what_it_cannot_keep(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(ROWS_DOC.read_text(encoding="utf-8").replace(f"| {CHEAP_ROW} |", "| gone |"), encoding="utf-8")
    before = doc.read_bytes()
    for args, said in ((["--rows", CHEAP_ROW], "--rows needs --write PATH"),
                       (["--write", str(doc), "--rows", "no such noise"], "no row's setting, true ratio or noise"),
                       (["--write", str(doc), "--rows", "rounded output"], f"{doc}: no row for {CHEAP_ROW}"),
                       (["--write", str(doc), "--draws", "7", "--rows", CHEAP_ROW], "2000 draws per row, not 7"),
                       (["--write", str(tmp_path / "none.md"), "--rows", CHEAP_ROW], "none.md: cannot be read")):
        out = simulate_cli(*args)
        assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert doc.read_bytes() == before
