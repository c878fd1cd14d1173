"""Pair accounting with levers nobody here wrote: stand-in commands that misbehave like real benchmarks."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from optseq.state.sequencer import Sequencer
from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

MISBEHAVE = Path(__file__).parents[1] / "lever_scripts" / "misbehave.py"
# 6 launches of 6 pairs fit the pair budget, so every launch is asked for `repeats`
RULE = 'metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 36'


def write_plan(tmp_path: Path, mode: str, *, ratio: float = 1.5, rule: str = RULE, timeout: float = 60) -> Path:
    argv = ["python", str(MISBEHAVE), "--mode", mode, "--ratio", str(ratio), "--launches", str(tmp_path / "launches.txt")]
    return one_lever_plan(tmp_path, argv, rule=rule, timeout=timeout, title="Pair accounting")


def run(tmp_path: Path, mode: str, **kw):
    logs = []
    with Sequencer.open(write_plan(tmp_path, mode, **kw), tmp_path / "db", mode="write") as seq:
        report = seq.run_lever("lever", on_log=logs.append)
        record = seq.store.get("runs", report.run_id)
        state = seq.machine.state("lever")
    launches = (tmp_path / "launches.txt").read_text().splitlines()
    return report, record, state, launches, logs


def test_a_misspelled_metric_fails_once_naming_both_names(tmp_path):
    report, record, state, launches, _ = run(tmp_path, "wrong_metric")
    assert len(launches) == 1  # never relaunched
    assert report.status == "failed" and report.exit_code == 1
    assert "items_per_s, the rule's metric" in report.message
    assert "items_per_sec (baseline 6, candidate 6)" in report.message
    assert record["status"] == "failed" and record["detail"] == report.message.removeprefix("lever: ")
    assert state == "ready"


@pytest.mark.parametrize("mode, words", [("zeros", "not positive and finite"), ("one_arm", "one arm only")])
def test_a_pass_without_a_complete_pair_fails_with_the_reason(tmp_path, mode, words):
    report, _, _, launches, _ = run(tmp_path, mode)
    assert len(launches) == 1 and report.status == "failed" and words in report.message


def test_repeated_pair_indices_count_once_and_do_not_loop(tmp_path):
    report, record, state, launches, logs = run(tmp_path, "duplicate_pair")
    assert len(launches) == 1  # 1 pair of 6 came back: asking again would bring 1 more
    assert report.status == "succeeded" and report.verdict == "inconclusive"
    assert report.summary["stats"]["n"] == 1
    assert [w for w in record["warnings"] if w.startswith("pass 1: 10 repeated pair indices (a second baseline")]
    assert "asked for 6 pairs, 1 counted" in report.message
    assert any("repeated pair indices" in line for line in logs)
    assert state == "measured"


def test_a_direction_flip_is_warned_and_not_counted(tmp_path):
    report, record, _, _, _ = run(tmp_path, "flip_direction")
    assert report.status == "succeeded"
    assert record["pass_counts"][0] == {"pass": 1, "asked": 6, "pairs": 3, "warnings": record["pass_counts"][0]["warnings"]}
    assert "pass 1: 6 samples with the other higher_is_better (candidate pair 3 says false, earlier samples of " \
           "items_per_s true; " in record["warnings"][0]


def test_a_replayed_pass_is_not_counted_and_ends_the_run(tmp_path):
    # the command ignores OPTSEQ_REPEATS and its seed: pass 2 prints pass 1's numbers again
    report, record, state, launches, _ = run(tmp_path, "replay", ratio=1.2)
    assert [line.split()[0] for line in launches] == ["1", "2"]
    assert report.status == "failed" and report.decision is None
    assert "the pass repeats an earlier one value for value" in report.message
    assert "(pass 2 = pass 1, 6 pairs)" in report.message
    assert record["pass_counts"][1]["pairs"] == 0
    assert state == "ready"


def test_output_saved_by_another_launch_is_caught_by_its_token_and_ends_the_run(tmp_path):
    # the command prints pass 1's saved samples again in pass 2: their launch token is pass 1's
    report, record, state, launches, _ = run(tmp_path, "saved_output", ratio=1.2)
    assert [line.split()[0] for line in launches] == ["1", "2"]
    assert report.status == "failed" and "12 samples from another launch" in report.message, report.message
    assert record["pass_counts"][1]["pairs"] == 0 and state == "ready"


def test_more_pairs_than_asked_are_counted_and_warned(tmp_path):
    report, record, _, _, _ = run(tmp_path, "extra_pairs")
    assert record["pass_counts"][0]["pairs"] == 9 and report.summary["stats"]["n"] % 9 == 0
    assert any("asked for 6 pairs, 9 came back complete" in w for w in record["warnings"])


def test_half_lines_are_log_and_the_pairs_still_count(tmp_path):
    report, _, _, _, _ = run(tmp_path, "half_lines")
    assert report.status == "succeeded" and report.decision == "adopt" and report.summary["stats"]["n"] == 36


@pytest.mark.slow  # waits out a real timeout
def test_the_timeout_covers_every_pass_together(tmp_path):
    # pass 1 is undecided (ratio at the bar), pass 2 hangs: the run ends at the run's deadline, not a pass's
    # 20 s: room for a loaded machine to get pass 1 done, so pass 2 is where the deadline lands
    report, record, _, launches, logs = run(tmp_path, "hang_second_pass", ratio=1.2, timeout=20)
    assert len(launches) == 2 and report.status == "timeout"
    note = next(line for line in logs if "timed out after" in line)
    assert float(note.split("timed out after ")[1].split(" s")[0]) < 20


def test_the_cli_reports_bad_samples_without_a_traceback(tmp_path, cli_env):
    plan = write_plan(tmp_path, "flip_direction")
    cli_env["OPTSEQ_PLAN"] = str(plan)
    out = subprocess.run(OPTSEQ + ["--run", "lever"], capture_output=True, text=True, env=cli_env, timeout=120)
    assert "Traceback" not in out.stderr and out.returncode in (0, 1)
    assert "with the other higher_is_better" in out.stderr
    status = json.loads(subprocess.run(OPTSEQ + ["runs", "--json"], capture_output=True, text=True,
                                       env=cli_env, timeout=60, check=True).stdout)
    assert status["runs"][0]["status"] == "succeeded"
