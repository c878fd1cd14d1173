"""The launch bench (python -m optseq.state.bench.launch): its command writes its section beside the others, each
way measured; no timing is asserted, the figures depend on the machine."""
from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the shim is Linux's")
def test_the_launch_bench_writes_its_section_and_keeps_the_others(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:other -->\nkept\n<!-- /section:other -->\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "optseq.state.bench.launch", "--launches", "2", "--write", str(doc)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = doc.read_text(encoding="utf-8")
    assert "<!-- section:other -->\nkept\n<!-- /section:other -->" in text
    section = text[text.index("<!-- section:launch -->"):]
    assert "python -m optseq.state.bench.launch --launches 2 --write" in section
    for row in ("| `true` |", "| `python -c pass` |", "| python -I -S -c pass (the shim's interpreter) |"):
        assert row in section, section
    assert section.rstrip().endswith("<!-- /section:launch -->")


def test_a_launch_count_below_one_is_refused_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "optseq.state.bench.launch", "--launches", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "optseq.state.bench.launch: --launches 0: must be at least 1"]
