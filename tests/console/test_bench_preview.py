"""The export preview bench runs the real console and writes its own section of a performance doc."""
from __future__ import annotations

import re

from optseq.console.bench import bench_preview


def test_one_round_writes_the_section_and_leaves_the_rest(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nkept\n", encoding="utf-8")
    assert bench_preview.main(["--rounds", "1", "--write", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\nkept\n")
    assert text.count("<!-- section:preview -->") == 1 and text.rstrip().endswith("<!-- /section:preview -->")
    rows = [line for line in text.splitlines() if line.startswith("| ") and " s | " in line]
    assert len(rows) == 3 and all(re.search(r"\| \d+\.\d\d s \| \d+\.\d\d \|$", row) for row in rows), rows
    assert re.search(r"MarkdownViewer / ExportPreview, side by side in one process: \d+\.\d×\.", text)
    assert "<!-- section:preview -->" in capsys.readouterr().out
