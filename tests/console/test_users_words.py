"""The words users know: hyperfine's `--export-json FILE` and `--export-markdown FILE` beside `--json` and
`--summary` (compare's old name, still read), for `compare` and `--run`; compare's bar as a lever's rule writes one,
`--min-speedup` (HEAD's speed over BASE's, as the verdict line says its bound), beside the old `--tolerance`.
Through the CLI on tests/code_repo.py's repository and a seeded stand-in bench; the refusals come in one line
before any launch."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.code_repo import make_repo
from tests.conftest import OPTSEQ
from tests.state.code.test_branch_levers import cli


def one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.slow  # a compare launches its arms as processes
def test_the_result_is_exported_as_json_and_markdown_and_the_bar_is_a_min_speedup(tmp_path):
    repo = make_repo(tmp_path)
    db, as_json, as_md = tmp_path / "db", tmp_path / "out" / "compare.json", tmp_path / "out" / "compare.md"
    as_json.parent.mkdir()
    # the plan's bar as a lever's rule writes one, in a plan of its own beside the repository's
    plan = repo.root / "gate.toml"
    plan.write_text((repo.root / "optseq.toml").read_text(encoding="utf-8") + "\n[compare]\nmin_speedup = 0.96\n",
                    encoding="utf-8")
    proc = cli(repo, db, "compare", "main", "fast", "--export-json", str(as_json), "--export-markdown", str(as_md),
               code=0, plan=plan)
    data = json.loads(as_json.read_text(encoding="utf-8"))
    assert data["verdict"] == "not slower" and data["exit_code"] == 0, data
    assert abs(data["tolerance"] - (1 / 0.96 - 1)) < 1e-12  # the bar the gate holds HEAD to is 0.96×
    assert f"95% lower bound clears {0.96:.3g}×" in data["reason"], data["reason"]
    # stdout keeps the verdict line (--json would print the JSON there too), and the markdown is the summary's
    assert proc.stdout.startswith(f"compare {data['run_id']}: not slower: ") and "tolerance 4.167%" in proc.stdout
    assert as_md.read_text(encoding="utf-8").startswith("## optseq compare: ✅ not slower")
    # the command line's bar over the plan's, in the same words
    again = json.loads(cli(repo, db, "compare", "main", "fast", "--min-speedup", "0.97", "--json", plan=plan).stdout)
    assert abs(again["tolerance"] - (1 / 0.97 - 1)) < 1e-12 and again["verdict"] == "not slower", again


def test_the_new_words_are_refused_in_one_line_before_any_launch(tmp_path):
    repo = make_repo(tmp_path)
    db = tmp_path / "db"
    folder = tmp_path / "reports"
    folder.mkdir()
    for args, said in (
            (("--min-speedup", "1.2"), "--min-speedup: min_speedup '1.2': a compare passes HEAD up to a tolerance "
                                       "slower than BASE: give a ratio below 1"),
            (("--min-speedup", "0.5"), "--min-speedup: min_speedup '0.5': at least 0.667"),
            (("--min-speedup", "fast"), "--min-speedup: min_speedup 'fast': expected HEAD's speed over BASE's, such "
                                        "as 0.97"),
            (("--min-speedup", "0.97", "--tolerance", "3%"), "--min-speedup and --tolerance say one bar two ways"),
            (("--export-markdown", "a.md", "--summary", "b.md"), "--export-markdown and --summary name one output "
                                                                 "two ways"),
            (("--export-json", str(folder / "r"), "--export-markdown", str(folder / "r")),
             "--export-json and --export-markdown name one file"),
            (("--export-json", str(folder)), f"--export-json {folder}: it is a folder"),
            (("--export-markdown", str(tmp_path / "no" / "s.md")), f"its folder {tmp_path / 'no'} does not exist")):
        refused = one_line(cli(repo, db, "compare", "main", "fast", *args, code=2))
        assert refused.startswith("optseq: ") and said in refused, (args, refused)
    assert not (db / "journal" / "runs.jsonl").exists()  # nothing was launched or recorded


def test_the_plans_bar_is_a_min_speedup_and_its_old_spelling_is_still_read(tmp_path):
    repo = make_repo(tmp_path)
    base = (repo.root / "optseq.toml").read_text(encoding="utf-8")
    for table, code, said in (("min_speedup = 0.97", 0, ": ok ("), ('tolerance = "3%"', 0, ": ok ("),
                              ("min_speedup = 1.2", 2, "compare.min_speedup: min_speedup 1.2: a compare passes HEAD "
                                                       "up to a tolerance slower than BASE"),
                              ('min_speedup = 0.97\ntolerance = "3%"', 2, "compare.min_speedup: says the bar "
                                                                          "tolerance says: give one")):
        plan = tmp_path / "gate.toml"
        plan.write_text(f"{base}\n[compare]\n{table}\n", encoding="utf-8")
        proc = subprocess.run([*OPTSEQ, "validate", str(plan)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == code and said in proc.stdout + proc.stderr, (table, proc.stdout, proc.stderr)


def test_help_names_the_old_spellings_beside_the_new(tmp_path):
    repo = make_repo(tmp_path)
    text = " ".join(cli(repo, tmp_path / "db", "compare", "--help").stdout.split())
    listed = " ".join(cli(repo, tmp_path / "db", "--help").stdout.split())
    assert "compare the commit gate, a regression check: is HEAD slower than BASE?" in listed, listed
    for said in ("--export-json FILE also write the JSON result to FILE (hyperfine's name)",
                 "--summary FILE the old name of --export-markdown",
                 "--tolerance T the same bar in its old spelling",
                 "--min-speedup R the speed HEAD must keep, over BASE's, as a lever's rule says it"):
        assert said in text, said


GAIN_PLAN = """
[plan]
title = "Exported runs"
as_of = 2026-12-04
lang = "en"

[workload]
command = ["python", "{bench}"]
metric = {{ name = "rate", regex = 'rate: ([0-9.]+)', unit = "items/s" }}
warmup = 0

[[levers]]
id = "fast"
title = "the fast path"
kind = "speedup"
rule = {{ metric = "rate", min_speedup = 1.2, repeats = 4, max_repeats = 4 }}
[levers.arms]
candidate_args = ["--fast=1"]
"""


def optseq(plan: Path, db: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(db), *args], capture_output=True, text=True,
                          timeout=600)
    assert "Traceback" not in proc.stderr and proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_a_runs_summary_is_exported_as_json_beside_its_lines_or_its_json(tmp_path):
    plan, db = tmp_path / "plan.toml", tmp_path / "db"
    plan.write_text(GAIN_PLAN.format(bench=Path(__file__).resolve().parents[1] / "state" / "lever_scripts" /
                                     "gain_bench.py"), encoding="utf-8")
    # refused in one line before anything runs or is made: a folder, and the option without --run
    refused = optseq(plan, db, "--export-json", str(tmp_path), "--run", "fast", code=2)
    assert refused.stderr == f"optseq: --export-json {tmp_path}: it is a folder; give a file's path (result.json)\n"
    refused = optseq(plan, db, "--export-json", str(tmp_path / "s.json"), "status", code=2)
    assert refused.stderr.startswith("optseq: --export-json before a command applies to --run") and \
        refused.stderr.count("\n") == 1, refused.stderr
    assert not db.exists()

    lines = optseq(plan, db, "--run", "fast", "--export-json", str(tmp_path / "run.json"))
    doc = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert doc["target"] == "fast" and [r["lever"] for r in doc["runs"]] == ["fast"], doc
    assert lines.stdout.startswith(f"run {doc['runs'][0]['run_id']} fast: succeeded ")  # its lines stay on stdout

    both = optseq(plan, db, "--run", "fast", "--json", "--export-json", str(tmp_path / "again.json"))
    assert json.loads(both.stdout) == json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))
    assert json.loads(both.stdout)["runs"][0]["run_id"] == doc["runs"][0]["run_id"] + 1
