"""The paint bench (`make paint-bench`): its section judges the three ratios against their targets and names its command;
the command runs the console in tmux, finds its keys and writes its own section. Figures are never asserted."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from optseq.console.bench import paint_bench
from optseq.console.bench.paint_bench import Round


def test_the_section_judges_both_ratios_by_wall_and_cpu_time():
    rounds = [Round(0.40, 0.50, 0.55, 0.15, 0.30, 0.42, 0.11, 0.50, 0.38),
              Round(0.44, 0.52, 0.60, 0.17, 0.32, 0.44, 0.13, 0.52, 0.40),
              Round(0.42, 0.90, 0.99, 0.30, 0.31, 0.50, 0.20, 0.80, 0.41)]
    text = paint_bench.render(rounds, command=paint_bench.MAKE_COMMAND, when="today", machine="a CPU")
    assert text.startswith("<!-- section:paint -->") and text.endswith("<!-- /section:paint -->")
    assert ("Written by `make paint-bench` (`python -m optseq.console.bench.paint_bench --write docs/performance.md`) on "
            "today; a CPU.") in text
    assert "| wall | 0.42 s | 0.52 s | 0.60 s | 0.17 s | 0.52 s |" in text  # medians
    assert "| CPU | 0.31 s | | 0.44 s | 0.13 s | 0.40 s |" in text
    # 0.60 / 0.52 = 1.15: not met; 0.44 / 0.40 = 1.10: met (the floor: a minimal app with a table and keys)
    assert ("Keyed first screen / minimal app's: 1.15× wall, 1.10× CPU (target ≤ 1.1×: **not met** by wall time, "
            "met by CPU time).") in text
    # 0.60 / 0.42 = 1.43, 0.44 / 0.31 = 1.42: met; 0.17 / 0.42 = 0.405 (shown so, not as 0.40), 0.13 / 0.31 = 0.42
    assert ("Keyed first screen / `import textual.app`: 1.43× wall, 1.42× CPU (target ≤ 1.5×: met by wall time, "
            "met by CPU time).") in text
    assert ("`optseq status` / `import textual.app`: 0.405× wall, 0.42× CPU (target ≤ 0.4×: **not met** by wall "
            "time, **not met** by CPU time).") in text
    met = paint_bench.render([Round(0.50, 0.6, 0.7, 0.19, 0.40, 0.55, 0.15, 0.7, 0.5)], command="python -m x", when="today",
                             machine="a CPU")
    assert "Written by `python -m x` on today" in met
    assert "0.38× wall, 0.37× CPU (target ≤ 0.4×: met by wall time, met by CPU time)" in met


def test_keys_are_read_off_the_last_line_under_the_table():
    table = " lever  state\n julia_port  ready\n"
    assert paint_bench.keyed(table + "r Run ? Help q Quit    ▏^p palette\n")
    assert not paint_bench.keyed(table + "\n")  # the footer not drawn yet
    assert not paint_bench.keyed(" something else\nr Run ? Help q Quit    ▏^p palette\n")  # no table yet


@pytest.mark.slow  # a real terminal, five processes
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_the_command_writes_its_own_section(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n", encoding="utf-8")
    for _ in range(2):  # the second write replaces the section
        out = subprocess.run([sys.executable, "-m", "optseq.console.bench.paint_bench", "--repeat", "1", "--write", str(doc)],
                             capture_output=True, text=True, timeout=600, cwd=paint_bench.ROOT)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip() == f"wrote {doc}"
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\n<!-- section:ci -->\nbench figures\n<!-- /section:ci -->\n")
    assert text.count("<!-- section:paint -->") == 1 and text.count("<!-- /section:paint -->") == 1
    paint = text[text.index("<!-- section:paint -->"):]
    assert "`python -m optseq.console.bench.paint_bench --repeat 1 --write" in paint
    assert "Medians of 1 rounds" in paint
    assert paint.count("(target ≤ 1.5×:") == 1 and paint.count("(target ≤ 0.4×:") == 1
    assert paint.count("(target ≤ 1.1×:") == 1 and "(d) minimal app, keyed" in paint
