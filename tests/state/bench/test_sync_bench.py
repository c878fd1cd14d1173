"""The sync bench (`python -m optseq.state.bench.sync`) at a tiny size, so the command that writes the sync section
of docs/performance.md cannot rot: real stores, a real bare `file://` remote, the real CLI."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from optseq.state.bench import store_doc, store_measure, sync_doc
from optseq.state.bench.sync import Row, Timed


def test_the_command_writes_its_section_beside_the_others(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n<!-- section:store -->\nstore table\n<!-- /section:store -->\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "optseq.state.bench.sync", "--runs", "12", "--repeat", "1",
                          "--write", str(doc)], capture_output=True, text=True, timeout=600, cwd=store_measure.ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == f"wrote {doc}"
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\n<!-- section:store -->\nstore table\n<!-- /section:store -->\n")
    assert text.count("<!-- section:sync -->") == 1 and text.count("<!-- /section:sync -->") == 1
    rows = [line for line in text.splitlines() if line.startswith("| 12 | ")]
    assert len(rows) == 1 and len(rows[0].split(" | ")) == 15
    # the bench checked that B holds every record of A; the git time is read from git's own trace, so it is there
    cells = rows[0].strip("| ").split(" | ")
    assert int(cells[1].replace(",", "")) > 12
    assert cells[5] != "0.00 s" and cells[11] != "0.00 s", rows[0]
    assert "Goals at 12 runs (the largest size measured here; the issue's size is 100,000)" in " ".join(
        text.splitlines())
    assert "--runs 12 --repeat 1" in text and "load average" in text
    # what bounds the incremental sync, measured in the same run: the interpreter, the sync's imports, git's fetch
    bounds = " ".join(" ".join(text.split()).split("What bounds the incremental sync (12 runs;")[1].split())
    assert re.search(r"takes \d+\.\d\d s \(`python -c pass`\)", bounds), bounds
    assert "optseq.state.store.store\"`) " in bounds and "The bare fetch of the same refs takes" in bounds


def test_a_store_kept_in_stores_is_built_once_and_copied_after(tmp_path):
    doc, stores = tmp_path / "performance.md", tmp_path / "stores"
    argv = [sys.executable, "-m", "optseq.state.bench.sync", "--runs", "12", "--repeat", "1", "--stores", str(stores),
            "--write", str(doc)]
    built = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=store_measure.ROOT)
    assert built.returncode == 0, built.stderr[-2000:]
    kept = stores / "runs-12"
    before = {p.relative_to(kept): p.read_bytes() for p in (kept / "journal").iterdir()}
    assert "built 12 runs in" in built.stderr and f"(kept in {kept})" in built.stderr
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=store_measure.ROOT)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"copying the 12-run store kept in {kept} (built in" in again.stderr and "built 12" not in again.stderr
    (row,) = [line for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("| 12 | ")]
    seconds = json.loads((kept / "built.json").read_text(encoding="utf-8"))["seconds"]
    assert row.split(" | ")[2] == store_doc.fmt_s(seconds)  # the build it took when it was kept
    # the kept store is a source only: what the bench's syncs and its one more run wrote went to its copy
    assert {p.relative_to(kept): p.read_bytes() for p in (kept / "journal").iterdir()} == before
    assert not (kept / "sync.git").exists()


def row(inc_wall: float, inc_git: float, fetch: float, status: float) -> Row:
    return Row(runs=100_000, records=1_000_000, build_s=500.0, push_s=60.0, first=Timed(300.0, 20.0),
               first_fetch_s=10.0, first_status_s=status, push_one_s=0.5, inc=Timed(inc_wall, inc_git),
               inc_fetch_s=fetch, inc_status_s=0.1)


def test_the_goals_are_judged_at_the_largest_size():
    good = " ".join(sync_doc.goals([row(0.5, 0.2, 0.3, 0.2)]))
    assert good.startswith("Goals at 100,000 runs:") and "not met" not in good
    assert "0.50 s vs 0.30 s (1.7×), met" in good and "own time: 0.30 s, met" in good
    slow = " ".join(sync_doc.goals([row(1.8, 0.3, 0.3, 0.4)]))
    assert "1.80 s vs 0.30 s (6.0×), **not met**" in slow and "own time: 1.50 s, **not met**" in slow
    assert "0.25 s: 0.40 s (the slower" in slow and slow.endswith("**not met**.")
