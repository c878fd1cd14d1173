"""The export's hours-saved section: the seed's 1.3× prior before any run, measured figures after one."""
from __future__ import annotations

from pathlib import Path

import pytest

from optseq.state.report import markdown as export
from optseq.state.plan import loader as plan_mod
from optseq.state.lifecycle.machine import PlanMachine

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
OPTION_B = "**Option B** (per-worker interleaved traversal)"


def section(doc: str, title: str) -> list[str]:
    lines = doc.splitlines()
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def rows(lines: list[str]) -> dict[str, list[str]]:
    """Table rows by their first cell, cells stripped."""
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells[1:]}


@pytest.fixture
def plan():
    return plan_mod.load(DEFAULT_PLAN)


def test_fresh_export_shows_the_calculus_with_the_seeds_prior(plan):
    doc = export.render(plan, PlanMachine(plan), {})
    lines = section(doc, "시간 절약 (hours saved)")
    assert lines[2].startswith("`H = q · share · (1 − 1/S) · V − C;")
    assert lines[2].endswith("계획 volume 48.3 h, iteration당 30 s (선언, 가정).")
    table = rows(lines)
    # S 1.3× (the seed's "인프라 1.3×", a prior), q 0.5 (a prior), share 0.8: H = 0.5 · 0.8 · 0.3/1.3 · 48.33 h
    assert table[OPTION_B] == ["1.30× prior", "0.50 prior", "0.8", "48.3", "0.00", "4.46", "0.00"]
    assert table["**AMP** trainer"] == ["—", "—", "0.2", "25.7", "0.00", "—", "—"]
    # the calculus's sentences in the doc's language (issue 32: they were English in the Korean doc)
    assert "- model_size 전에 option_b (plan의 gate): 4.46 h; model_size 먼저: -0.10 h (재실행 2개): " \
           "option_b 먼저가 4.56 h 더 나음" in lines
    assert "- 가정:" in lines and "  - volume.s_per_iter = 30 s (가정)" in lines
    assert "- 빠진 입력:" in lines
    # placed after the order it weighs, before the status; the seed's own sections are unchanged around it
    assert doc.index("## 권장 순서와 사유") < doc.index("## 시간 절약") < doc.index("## 현재 진행 상태")


def test_after_a_run_the_export_shows_the_measured_figures(plan):
    machine = PlanMachine(plan)
    at = "2026-12-01T10:00:00+00:00"
    records = [
        ("criteria", dict(lever="julia_port", candidate="torch_jl", criterion="c4", outcome="fail")),
        ("decisions", dict(lever="julia_port", outcome="NO-GO", auto=True, why="c4 fail", runs=[])),
        ("events", dict(type="plan", lever="option_b", path="docs/plans/option_b.md")),
        ("runs", dict(lever="option_b", status="succeeded", verdict="adopt", started="2026-12-01T09:00:00+00:00",
                      ended="2026-12-01T09:06:00+00:00",
                      summary={"stats": {"metric": "advantage_samples_per_s", "estimate": 1.42, "ci_low": 1.31,
                                         "ci_high": 1.55, "n": 10, "ratios": [1.42] * 10}})),
        ("decisions", dict(lever="option_b", outcome="adopt", auto=True, runs=[4],
                           stats={"estimate": 1.42, "ci_low": 1.31, "ci_high": 1.55, "n": 10})),
    ]
    for i, (table, fields) in enumerate(records, 1):
        machine.apply(table, {"id": i, "seq": i, "at": at, **fields})
    lines = section(export.render(plan, machine, {}, lang="en"), "Hours saved")
    table = rows(lines)
    # measured 1.42×, adopted (q 1); C = the 6-minute run = 0.1 h; f = 0.8 · (1 − 1/1.42) = 0.236620;
    # H = 0.236620 · 48.33 − 0.1 = 11.34 h, within [0.8 · (1 − 1/1.31) · 48.33 − 0.1, … 1.55 …] = [9.05, 13.62];
    # V* = 0.1 / 0.236620 = 0.4226 h
    assert table[OPTION_B][:4] == ["1.42× measured [1.31, 1.55]", "1.00 adopted", "0.8", "48.3"]
    assert table[OPTION_B][4:] == ["0.10", "11.3 [9.05, 13.6]", "0.42"]
    assert any(line.startswith("- Plan's order: model_size → ") for line in lines)
    assert "  - adopted since the plan (option_b): their savings count against the declared s_per_iter, the plan's " \
           "stack before them" in lines


def test_a_plan_without_a_volume_has_no_section(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\ntitle = "T"\nas_of = 2026-11-01\n[[levers]]\nid = "a"\ntitle = "A"\nkind = "speedup"\n'
                    'plan_doc = "a.md"\n', encoding="utf-8")
    plan = plan_mod.load(path)
    assert "Hours saved" not in export.render(plan, PlanMachine(plan), {}, lang="en")
