"""One lever's figures replaced in docs/performance.md, every other line kept."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from optseq.engine.bench.lever_report import replace_lever
from optseq.engine.bench.report import kept_section, parse_lines
from tests.engine.test_report import AMP_LINES, ENV, TRT_LINES, render, sample

COMMAND = "python -m optseq.engine.bench amp --size ci --write docs/performance.md"
DATE = "2026-12-02 11:50 UTC"
LOAD = "load average 3.0 (1 min), 3.5 (5 min) on 2 CPUs"


def amp_again():
    lines = [ENV, sample("baseline", 100.0, 0), sample("candidate", 400.0, 0),
             '{"event": "quality", "name": "loss_delta", "value": 0.001, "limit": 0.01}', '{"event": "done"}']
    return parse_lines("amp", lines)


def without_amp(doc):
    ci = kept_section(doc, "ci")
    block = re.search(r"^### amp\n.*?(?=^### )", ci, flags=re.S | re.M).group(0)
    trimmed = "\n".join(line for line in ci.replace(block, "").splitlines() if not line.startswith("| amp |"))
    return doc.replace(ci, trimmed)


def test_only_the_levers_row_and_block_change():
    gpu = "<!-- section:gpu -->\n## GPU, GPU size\n\n| amp | succeeded | 2.100× |\n<!-- /section:gpu -->"
    before = render("# Performance\n\n" + gpu + "\n")
    after = replace_lever(before, "ci", amp_again(), COMMAND, DATE, LOAD)
    assert "| amp | succeeded | train_samples_per_s | 1.500× |" in before
    assert "| amp | succeeded | train_samples_per_s | 4.000× | 4.000–4.000 | 1 | 1 ok |" in after
    assert "1.500×" not in after and after.count("### amp") == 1
    assert f"Measured {DATE} by `{COMMAND}` ({LOAD})" in after
    assert "`loss_delta` = 0.001 (limit 0.01): ok" in after
    # Without amp's row and block, the two documents are the same, line for line.
    assert without_amp(after) == without_amp(before)
    assert kept_section(after, "gpu") == gpu
    assert "| h16x2 | 0.6 (median of 3) | 2.05 |" in after


def test_a_lever_not_yet_in_the_section_is_added_to_it():
    before = render()
    run = parse_lines("option_b", [ENV, sample("baseline", 10.0, 0, "advantage_samples_per_s"),
                                   sample("candidate", 80.0, 0, "advantage_samples_per_s"), '{"event": "done"}'])
    after = kept_section(replace_lever(before, "ci", run, COMMAND, DATE, LOAD), "ci")
    lines = after.splitlines()
    row = lines.index("| option_b | succeeded | advantage_samples_per_s | 8.000× | 8.000–8.000 | 1 | — |")
    assert lines[row - 1].startswith("| latency |") and lines[row + 1] == ""
    assert after.index("### latency") < after.index("### option_b") < after.index("<!-- /section:ci -->")


def test_a_document_without_the_section_gets_one():
    after = replace_lever("", "ci", parse_lines("tensorrt", TRT_LINES), COMMAND, DATE, LOAD)
    assert "| tensorrt | unavailable: " in kept_section(after, "ci")
    assert AMP_LINES  # the shared fixtures came from test_report


@pytest.mark.slow  # a real bench child
def test_a_lever_run_writes_its_figures_into_the_file(tmp_path):
    out = tmp_path / "performance.md"
    out.write_text(render())
    proc = subprocess.run([sys.executable, "-m", "optseq.engine.bench", "tensorrt", "--repeats", "1", "--warmup", "0",
                           "--write", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ci = kept_section(out.read_text(), "ci")
    assert "| tensorrt | unavailable: TensorRT needs CUDA and the tensorrt package: no CUDA device |" not in ci
    assert "| tensorrt | unavailable: " in ci or "| tensorrt | succeeded |" in ci
    command = f"python -m optseq.engine.bench tensorrt --size ci --repeats=1 --warmup=0 --write {out}"
    assert f"by `{command}` (before: load average" in ci
    assert "| amp | succeeded | train_samples_per_s | 1.500× |" in ci  # another lever's figures stay
