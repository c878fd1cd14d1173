"""The markdown export: the seed doc reproduced from a fresh state, then kept true as records arrive."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from optseq.state.report import markdown as export
from optseq.state.report.graph import FAN_WIDTH
from optseq.state.report.tables import HISTORY_PER_LEVER
from optseq.state.plan import loader as plan_mod
from optseq.state.lifecycle.machine import PlanMachine
from optseq.state.lifecycle.run_index import kept_run

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = ROOT / "configs" / "sequencing.toml"
SEED = ROOT / "shared" / "seed" / "optimization-sequencing.md"
if not SEED.exists():
    SEED = Path("/work/shared/seed/optimization-sequencing.md")

# The seed's own lines, embedded so the tests run where shared/ is absent (CI).
SEED_TABLE = [
    "| Lever | 어디서 nail되는지 | 현재 상태 |",
    "| --- | --- | --- |",
    "| **Model size growth** (hidden ≥ 1024 / layers ≥ 6) | `docs/plans/model_size_experiment.md` | 인프라 미설치 |",
    "| **Option B** (per-worker interleaved traversal) | plan 미작성 | 미시작 |",
    "| **AMP** trainer | `docs/plans/archive/amp_trainer.md` (구현 됨, default off) | 모델 키운 후 재측정 |",
    "| **torch.compile** trainer | `docs/plans/torch_compile.md` | 모델 키운 후 재측정 |",
    "| **TensorRT** inference | plan 미작성 | 모델 키운 + eval dense 시점 |",
    "| **Option A re-enable** | 코드 있음 (default off) | 모델 키운 후 또는 Option B 후 |",
    "| **Julia port** | `docs/research/julia_port_evaluation.md` | Torch.jl 결과 대기 중. Flux FAIL. |",
]
SEED_STATUS = [
    "## 현재 진행 상태 (2026-05-07)",
    "",
    "- ⏳ Julia Torch.jl criterion 4 측정 중",
    "- ⏸ Option B: plan 미작성, Julia 결과 후",
    "- ⏸ 모델 크기 실험 인프라: 미시작",
    "- ✅ Cython 봇 (~2.55× on opponent_act)",
    "- ✅ Option A 코드: 머지됨, default off",
    "- ✅ AMP 코드: 머지됨, default off",
]
SEED_POINTS = [
    "## 결정 점들",
    "",
    "언제 이 doc 다시 보는가:",
    "- Torch.jl 결과 들어올 때 (Julia 트랙 closed/branched)",
    "- Option B plan 작성 시점",
    "- 모델 크기 실험 결과 받을 때 (downstream lever 4개 모두 trigger 결정)",
]
SEED_TREE_EDGES = {
    ("Julia decision (Torch.jl pending)", "GO → port 작업 (큰 분기)"),
    ("Julia decision (Torch.jl pending)", "NO-GO → Python/Cython 유지"),
    ("NO-GO → Python/Cython 유지", "Option B 인프라 작업"),
    ("Option B 인프라 작업", "모델 크기 실험 (200 iter × 4 config)"),
    ("모델 크기 실험 (200 iter × 4 config)", "AMP 재측정"),
    ("모델 크기 실험 (200 iter × 4 config)", "compile 재측정"),
    ("모델 크기 실험 (200 iter × 4 config)", "TensorRT (eval-heavy)"),
    ("모델 크기 실험 (200 iter × 4 config)", "Option A 재활성"),
}


# -- helpers ----------------------------------------------------------------------------------
class Replay:
    """A machine plus the records replayed onto it, as the store would hand them to export."""

    def __init__(self, plan):
        self.plan = plan
        self.machine = PlanMachine(plan)
        self.records: dict[str, list[dict]] = {t: [] for t in ("decisions", "runs", "criteria", "facts", "events")}
        self.seq = 0

    def add(self, table: str, at: str, **fields) -> dict:
        self.seq += 1
        record = {"id": self.seq, "seq": self.seq, "at": at, **fields}
        self.records[table].append(record)
        self.machine.apply(table, record)
        return record

    def render(self, **kw) -> str:
        # the runs as the views hand them over (latest_runs): the run index's typed copies
        runs = [kept_run(r) for r in self.records["runs"]]
        return export.render(self.plan, self.machine, {**self.records, "runs": runs}, **kw)


@pytest.fixture
def plan():
    return plan_mod.load(DEFAULT_PLAN)


@pytest.fixture
def fresh(plan) -> str:
    return export.render(plan, PlanMachine(plan), {})


def no_go(plan) -> Replay:
    """The seed's next event: Torch.jl fails criterion 4, the Julia port is decided NO-GO."""
    r = Replay(plan)
    r.add("criteria", "2026-11-29T08:59:00+00:00", lever="julia_port", candidate="torch_jl", criterion="c4",
          outcome="fail", evidence="0.8x of PyTorch")
    r.add("decisions", "2026-11-29T09:00:00+00:00", lever="julia_port", outcome="NO-GO", auto=True,
          rule="criteria", why="Torch.jl c4 fail", runs=[], stats=None)
    r.add("events", "2026-11-29T09:00:00+00:00", type="decision_point", point="torch_jl_result",
          lever="julia_port")
    return r


def section(doc: str, heading: str) -> list[str]:
    """The lines of the `## heading` section (heading line included), without trailing blanks.

    The export's marker comment (its last line) belongs to no section.
    """
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line == f"## {heading}" or line.startswith(f"## {heading} ("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = lines[start:end]
    if body and body[-1].startswith("<!-- optseq export"):
        body.pop()
    while body and not body[-1].strip():
        body.pop()
    return body


def table_rows(doc: str, heading: str) -> list[str]:
    return [line for line in section(doc, heading) if line.startswith("|")]


def code_blocks(doc: str, lang: str = "") -> list[list[str]]:
    blocks, current = [], None
    for line in doc.splitlines():
        if current is None and line.startswith("```") and line[3:] == lang:
            current = []
        elif current is not None and line == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _char_at(line: str, col: int) -> str:
    x = 0
    for ch in line:
        if x == col:
            return ch
        x += _width(ch)
    return " "


BOX = "│├└─┬┐┌┼▼"
LABEL = re.compile(rf"[^\s{BOX}]+(?: [^\s{BOX}]+)*")


def tree_edges(lines: list[str]) -> set[tuple[str, str]]:
    """(parent, child) label pairs read back from the text tree by geometry alone.

    A label hangs from the stem at its label column + 3 of the nearest label above: after `├── `/`└── `
    the stem is where that connector starts; under a `▼` the stem is straight above, or, in a row of
    siblings, where the `├──┬──┐` row begins.
    """
    labels: list[tuple[int, int, str]] = []
    edges = set()
    for row, line in enumerate(lines):
        for m in LABEL.finditer(line):
            col = _width(line[:m.start()])
            before = line[:m.start()]
            if before.endswith(("├── ", "└── ")):
                stem = col - 4
            elif row >= 2 and _char_at(lines[row - 1], col + 3) == "▼":
                above = _char_at(lines[row - 2], col + 3)
                if above == "│":
                    stem = col + 3
                else:
                    assert above in "┬┐├", f"no connector above {m.group()!r}"
                    stem = col + 3
                    while _char_at(lines[row - 2], stem) != "├":
                        stem -= 1
                        assert _char_at(lines[row - 2], stem) in "─┬├", f"broken fan row above {m.group()!r}"
            else:
                stem = None
            if stem is not None:
                parent = max((l for l in labels if l[1] + 3 == stem and l[0] < row), key=lambda l: l[0], default=None)
                assert parent is not None, f"{m.group()!r} hangs from nothing"
                edges.add((parent[2], m.group()))
            labels.append((row, col, m.group()))
    return edges


# -- the fresh default plan is the seed ---------------------------------------------------------------
def test_fresh_table_reproduces_the_seed_rows(fresh):
    assert section(fresh, "Pending levers")[:2] == ["## Pending levers", ""]
    assert table_rows(fresh, "Pending levers") == SEED_TABLE


def test_embedded_seed_lines_match_the_seed_file():
    if not SEED.exists():
        pytest.skip("shared/seed is not in this checkout")
    seed = SEED.read_text(encoding="utf-8")
    assert table_rows(seed, "Pending levers") == SEED_TABLE
    assert section(seed, "현재 진행 상태") == SEED_STATUS
    assert section(seed, "결정 점들") == SEED_POINTS


def test_fresh_doc_equals_the_seed_outside_the_graph(fresh):
    if not SEED.exists():
        pytest.skip("shared/seed is not in this checkout")
    seed = SEED.read_text(encoding="utf-8")
    assert fresh.split("\n## ")[0] == seed.split("\n## ")[0]  # title and intro
    for heading in ("Pending levers", "권장 순서와 사유", "현재 진행 상태", "결정 점들"):
        assert section(fresh, heading) == section(seed, heading)


def test_fresh_title_and_order_are_the_plan_text(fresh):
    lines = fresh.splitlines()
    assert lines[:3] == ["# Optimization Sequencing", "",
                         "여러 최적화 lever 사이의 의존성과 권장 진행 순서. 시간 지나면서 update."]
    order = section(fresh, "권장 순서와 사유")
    assert order[2] == ('**1. Julia 결정 확정 (지금 진행 중)** — Torch.jl criterion 4 결과 도착하면 Julia GO/NO-GO '
                        '자동 판정. 이게 "어떤 런타임 위에서 최적화하나"를 결정.')
    assert order[4] == "**2. 인프라 최적화 먼저, 모델 크기 실험 뒤에** — 핵심 원칙."
    assert order[5].startswith("   - 모델 크기 실험은 1회성 아님.")
    assert order[-1] == '**4. Option A 재활성은 옵션 B 또는 모델 키움 후** — `docs/performance.md` "Option A Bench Result" 참조.'
    assert "✅" not in "\n".join(order)


def test_fresh_status_bullets_and_marks_are_the_seeds(fresh):
    assert section(fresh, "현재 진행 상태") == SEED_STATUS


def test_fresh_decision_points_are_the_seeds(fresh):
    assert section(fresh, "결정 점들") == SEED_POINTS


def test_tree_has_the_seeds_edges(fresh):
    (tree,) = code_blocks(fresh)
    assert tree_edges(tree) == SEED_TREE_EDGES
    # the head of the tree is the seed's art line for line
    assert tree[:4] == ["Julia decision (Torch.jl pending)", "   │",
                        "   ├── GO → port 작업 (큰 분기)", "   └── NO-GO → Python/Cython 유지"]
    assert "Cython" not in " ".join(tree[4:])  # cython_bot takes part in no edge


def test_mermaid_edges_labels_and_classes(fresh):
    (chart,) = code_blocks(fresh, "mermaid")
    assert chart[0] == "flowchart TD"
    body = [line.strip() for line in chart]
    for edge in ('l_julia_port -->|"GO"| l_port', 'l_julia_port -->|"NO-GO"| l_option_b',
                 'l_option_b -->|"decided"| l_model_size', 'l_model_size -->|"decided"| l_amp',
                 'l_model_size -->|"decided"| l_tensorrt', "f_eval_dense --> l_tensorrt",
                 'l_option_b -.->|"decided"| l_option_a', 'l_model_size -.->|"decided"| l_option_a'):
        assert edge in body
    assert len([line for line in body if "->" in line]) == 9
    assert 'f_eval_dense(["fact: eval_dense = false"])' in body
    assert 'l_julia_port["Julia decision (Torch.jl pending)"]' in body
    assert "class l_julia_port ready" in body
    assert "class l_port,l_option_b,l_model_size,l_amp,l_compile,l_tensorrt,l_option_a blocked" in body
    assert {line.split()[1] for line in body if line.startswith("classDef")} >= {
        "ready", "blocked", "decided", "stale", "closed"}
    assert not any("cython_bot" in line for line in body)


def test_fresh_results_show_the_plan_prior(fresh):
    assert table_rows(fresh, "측정 결과")[2] == (
        "| **Cython 봇** (opponent_act) | adopt | — | 2.55× | — | — | — | 2026-05-07 | plan |  |")


# -- after the NO-GO ---------------------------------------------------------------------------------------
def test_no_go_rewrites_the_julia_row_and_opens_option_b(plan):
    doc = no_go(plan).render()
    rows = table_rows(doc, "Pending levers")
    assert not any(row.startswith("| **Julia port** |") for row in rows)  # decided: pending no more
    assert "- ✅ Julia port: NO-GO (2026-11-29, 자동: Torch.jl c4 fail)" in section(doc, "현재 진행 상태")
    assert rows[3] == "| **Option B** (per-worker interleaved traversal) | plan 미작성 | plan 대기 |"
    # levers nothing happened to keep the plan's words
    assert rows[2] == SEED_TABLE[2] and rows[6] == SEED_TABLE[6]
    assert not any("port 작업" in row for row in rows)  # port is closed, not pending


def test_no_go_status_marks_port_closed_and_dates_the_heading(plan):
    status = section(no_go(plan).render(), "현재 진행 상태")
    assert status == [
        "## 현재 진행 상태 (2026-11-29)",
        "",
        "- ✅ Julia port: NO-GO (2026-11-29, 자동: Torch.jl c4 fail)",
        "- ⏸ Option B: plan 대기",
        "- ⏸ 모델 크기 실험 인프라: 미시작",
        "- ✅ Cython 봇 (~2.55× on opponent_act)",
        "- ✅ Option A 코드: 머지됨, default off",
        "- ✅ AMP 코드: 머지됨, default off",
        "- — Julia port 작업: closed: julia_port NO-GO 결정",
    ]


def test_no_go_fires_the_decision_point(plan):
    points = section(no_go(plan).render(), "결정 점들")
    # the port is closed by NO-GO: the point says so and what would open it, never that it reopens it
    assert points[3] == ("- Torch.jl 결과 들어올 때 (Julia 트랙 closed/branched) — 2026-11-29 발생; "
                         "다시 볼 lever: Option B; Julia port 작업: closed 유지, julia_port NO-GO 결정됨 (GO 필요)")
    assert points[4:] == SEED_POINTS[4:]
    assert section(no_go(plan).render(lang="en"), "Decision points")[3] == (
        "- When the Torch.jl result comes in (the Julia track closed/branched) — fired 2026-11-29; "
        "the lever to look at again: Option B; Julia port work stays closed: julia_port was decided NO-GO, needs GO")


def test_go_fires_the_decision_point_for_the_port_and_not_option_b(plan):
    r = Replay(plan)
    r.add("decisions", "2026-11-29T09:00:00Z", lever="julia_port", outcome="GO", auto=True, rule="criteria",
          why="Torch.jl pass", runs=[])
    r.add("events", "2026-11-29T09:00:00Z", type="decision_point", point="torch_jl_result", lever="julia_port")
    assert section(r.render(lang="en"), "Decision points")[3] == (
        "- When the Torch.jl result comes in (the Julia track closed/branched) — fired 2026-11-29; "
        "the lever to look at again: Julia port work; Option B stays blocked: julia_port was decided GO, needs NO-GO")


def test_no_go_graph_marks_the_branch_and_the_closed_port(plan):
    doc = no_go(plan).render()
    (tree,) = code_blocks(doc)
    assert tree[0] == "Julia decision ✅ NO-GO"
    assert "   ├── GO → port 작업 (큰 분기) — closed" in tree
    assert "   └── NO-GO → Python/Cython 유지 (선택됨)" in tree
    edges = tree_edges(tree)
    assert ("NO-GO → Python/Cython 유지 (선택됨)", "Option B 인프라 작업 ⏸") in edges
    assert len(edges) == len(SEED_TREE_EDGES)
    (chart,) = code_blocks(doc, "mermaid")
    body = [line.strip() for line in chart]
    assert "class l_port closed" in body and "class l_julia_port decided" in body
    order = section(doc, "권장 순서와 사유")
    assert order[2].startswith("**1. Julia 결정 확정** ✅ — ")  # no `(지금 진행 중)` beside the ✅


def test_go_lists_port_as_pending(plan):
    r = Replay(plan)
    r.add("criteria", "2026-11-29T09:00:00Z", lever="julia_port", candidate="torch_jl", criterion="c4",
          outcome="pass", evidence="")
    r.add("decisions", "2026-11-29T09:00:00Z", lever="julia_port", outcome="GO", auto=True, rule="criteria",
          why="Torch.jl pass", runs=[])
    rows = table_rows(r.render(), "Pending levers")
    assert rows[-1] == "| **Julia port 작업** | plan 미작성 | plan 대기 |"
    assert rows[3] == SEED_TABLE[3]  # option_b stays blocked and unchanged


def test_criteria_result_alone_changes_the_decision_lever_text(plan):
    r = Replay(plan)
    r.add("criteria", "2026-06-01T00:00:00Z", lever="julia_port", candidate="torch_jl", criterion="c1",
          outcome="pass", evidence="re-run on the new box")
    doc = r.render()
    assert table_rows(doc, "Pending levers")[-1] == (
        "| **Julia port** | `docs/research/julia_port_evaluation.md` | 준비됨; Flux FAIL, Torch.jl pending |")
    # nothing can run (a criterion is the user's to record): no lever is next, as `optseq status` says
    assert section(doc, "현재 진행 상태")[2] == "- ⏳ Julia port: 준비됨; Flux FAIL, Torch.jl pending"
    assert code_blocks(doc)[0][0] == "Julia decision (Torch.jl pending) ⏳"


# -- languages --------------------------------------------------------------------------------------------
HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


def test_en_switches_labels_and_the_plans_prose(plan, fresh):
    doc = export.render(plan, PlanMachine(plan), {}, lang="en")
    assert table_rows(doc, "Pending levers")[0] == "| Lever | Plan | Current state |"
    assert table_rows(doc, "Pending levers")[2:4] == [
        "| **Model size growth** (hidden ≥ 1024 / layers ≥ 6) | `docs/plans/model_size_experiment.md` | "
        "infra not set up |",
        "| **Option B** (per-worker interleaved traversal) | plan not written | not started |"]
    for heading in ("## Dependency graph", "## Recommended order and reasons", "## Current status (2026-05-07)",
                    "## Decision points", "## Results"):
        assert heading in doc.splitlines()
    assert "When to revisit this doc:" in doc.splitlines()
    assert section(doc, "Current status")[2] == "- ⏳ Julia Torch.jl criterion 4 being measured"
    assert section(doc, "Decision points")[3] == \
        "- When the Torch.jl result comes in (the Julia track closed/branched)"
    assert "   ├── GO → port work (a big branch)" in code_blocks(doc)[0]
    assert section(doc, "Recommended order and reasons")[2].startswith(
        "**1. Settle the Julia decision (in progress now)** — When the Torch.jl criterion 4 result arrives")
    # English throughout: the seed's prose is the plan's translation, not left in Korean
    assert HANGUL.findall(doc) == []
    # and the Korean doc is still the seed's
    assert export.render(plan, PlanMachine(plan), {}, lang="ko") == fresh


def test_en_generated_text(plan):
    doc = no_go(plan).render(lang="en")
    rows = table_rows(doc, "Pending levers")
    assert "- ✅ Julia port: NO-GO (2026-11-29, auto: Torch.jl c4 fail)" in section(doc, "Current status")
    assert rows[3].endswith("| plan not written | waiting for a plan |")
    assert "   └── NO-GO → stay on Python/Cython (taken)" in code_blocks(doc)[0]
    assert HANGUL.findall(doc) == []


def test_a_text_without_the_export_language_falls_back_to_the_plans(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text('[plan]\ntitle = "Mixed"\nas_of = 2026-01-01\nlang = "ko"\n'
                    'intro = { ko = "소개", en = "An intro" }\n'
                    '\n[[levers]]\nid = "a"\nkind = "speedup"\ntitle = "**A** 레버"\nstatus = "미시작"\n',
                    encoding="utf-8")
    mixed = plan_mod.load(path)
    doc = export.render(mixed, PlanMachine(mixed), {}, lang="en")
    assert "\nAn intro\n" in doc and "소개" not in doc
    assert table_rows(doc, "Pending levers")[2] == "| **A** 레버 | plan not written | 미시작 |"
    ko = export.render(mixed, PlanMachine(mixed), {}, lang="ko")
    assert "\n소개\n" in ko and "An intro" not in ko


def test_unknown_language_is_one_line_error(plan):
    with pytest.raises(ValueError, match=r"unknown export language 'fr' \(one of ko, en\)"):
        export.render(plan, PlanMachine(plan), {}, lang="fr")


def test_blocked_reasons_are_localized(plan):
    r = Replay(plan)
    r.add("events", "2026-06-02T00:00:00Z", type="plan", lever="option_b", path="docs/plans/option_b.md")
    assert table_rows(r.render(), "Pending levers")[3] == (
        "| **Option B** (per-worker interleaved traversal) | `docs/plans/option_b.md` | 대기: julia_port NO-GO 필요 |")
    assert table_rows(r.render(lang="en"), "Pending levers")[3].endswith("| blocked: needs julia_port NO-GO |")


# -- cells, results, history ----------------------------------------------------------------------------------
ESCAPE_PLAN = '''
[plan]
title = "Pipes"
as_of = 2026-01-01
lang = "en"

[[levers]]
id = "a"
title = "**A|B** lever"
kind = "infra"
plan_note = "note | with pipe"
status = """line one
line two"""
'''


def test_pipes_and_newlines_are_escaped_in_cells(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(ESCAPE_PLAN, encoding="utf-8")
    p = plan_mod.load(path)
    doc = export.render(p, PlanMachine(p), {})
    assert table_rows(doc, "Pending levers")[2] == r"| **A\|B** lever | note \| with pipe | line one<br>line two |"
    assert section(doc, "Results")[2] == "Nothing measured yet."


def measured(plan) -> Replay:
    """NO-GO, Option B adopted with stats, then a model size, AMP, and a second model size that stales AMP."""
    r = no_go(plan)
    r.add("events", "2026-12-01T10:00:00Z", type="plan", lever="option_b", path="docs/plans/option_b.md")
    r.add("decisions", "2026-12-01T12:00:00Z", lever="option_b", outcome="adopt", auto=True, rule="paired",
          why="", runs=[7], stats={"estimate": 1.42, "ci_low": 1.31, "ci_high": 1.55, "n": 10, "p_value": 0.002,
                                   "metric": "adv_samples_per_s"})
    first = r.add("decisions", "2026-12-02T12:00:00Z", lever="model_size", outcome="h64x3", auto=False,
                  why="cheapest", runs=[])
    r.add("decisions", "2026-12-03T12:00:00Z", lever="amp", outcome="adopt", auto=True, why="", runs=[9],
          stats={"estimate": 1.2, "ci_low": 1.12, "ci_high": 1.3, "n": 7, "p_value": 0.00004,
                 "metric": "train_samples_per_s"})
    r.add("decisions", "2026-12-04T12:00:00Z", lever="model_size", outcome="h128x6", auto=False, why="bigger",
          runs=[], supersedes=first["id"])
    return r


def test_results_row_for_a_decision_with_stats(plan):
    doc = measured(plan).render()
    rows = table_rows(doc, "측정 결과")
    assert rows[0] == "| Lever | 결과 | 지표 | 비율 | 95% CI | n | p | 날짜 | 근거 | 비고 |"
    assert rows[2:] == [
        "| **Cython 봇** (opponent_act) | adopt | — | 2.55× | — | — | — | 2026-05-07 | plan |  |",
        "| **Option B** (per-worker interleaved traversal) | adopt | adv_samples_per_s | 1.42× | [1.31, 1.55] "
        "| 10 | 0.002 | 2026-12-01 | 자동 |  |",
        "| **AMP** trainer | adopt | train_samples_per_s | 1.20× | [1.12, 1.30] | 7 | <0.001 | 2026-12-03 | 자동 "
        "| stale: amp 측정 뒤 model_size h128x6 결정 |",
    ]
    results = section(doc, "측정 결과")
    history = results[results.index("### 이전 결정") + 2:]
    assert history == ["- **Model size growth** (hidden ≥ 1024 / layers ≥ 6): h64x3 (2026-12-02, 수동: cheapest)"]


def test_measured_state_text_everywhere(plan):
    r = measured(plan)
    r.add("runs", "2026-12-04T13:00:00Z", lever="compile", status="running")
    doc = r.render()
    rows = table_rows(doc, "Pending levers")
    # model_size and option_b are decided: the status and the results have them, the pending table no more
    assert [row.split(" | ")[0] for row in rows[2:]] == ["| **AMP** trainer", "| **torch.compile** trainer",
                                                          "| **TensorRT** inference", "| **Option A re-enable**"]
    assert rows[2].endswith("| stale: amp 측정 뒤 model_size h128x6 결정 |")
    assert rows[3].endswith("| 측정 중 (9) |")
    assert rows[5].endswith("| 준비됨 (next) |")  # option_a: ready on either gate, an infra lever first
    status = section(doc, "현재 진행 상태")
    assert status[0] == "## 현재 진행 상태 (2026-12-04)"
    assert "- ✅ AMP 코드: 머지됨, default off — stale: amp 측정 뒤 model_size h128x6 결정" in status
    assert "- ⏳ torch.compile: 측정 중 (9)" in status
    order = section(doc, "권장 순서와 사유")
    assert order[4].startswith("**2. 인프라 최적화 먼저, 모델 크기 실험 뒤에** ✅ — ")
    assert "✅" not in order[-3]  # AMP is stale and compile still running
    (tree,) = code_blocks(doc)
    assert tree_edges(tree) >= {("Option B 인프라 작업 ✅ adopt", "모델 크기 실험 (200 iter × 4 config) ✅ h128x6"),
                                ("모델 크기 실험 (200 iter × 4 config) ✅ h128x6", "AMP 재측정 ⏳ stale")}
    (chart,) = code_blocks(doc, "mermaid")
    assert "class l_amp stale" in [line.strip() for line in chart]


def test_today_is_a_hidden_footer(plan):
    doc = export.render(plan, PlanMachine(plan), {}, today="2026-12-05")
    assert doc.endswith("\n\n<!-- optseq export 2026-12-05 -->\n")


# -- tree layout on another plan: vertical lists where siblings have children or do not fit ------------------
LAYOUT_PLAN = '''
[plan]
title = "Layout"
as_of = 2026-01-01

[[levers]]
id = "root"
title = "Root"
kind = "infra"
plan_doc = "r.md"

[[levers]]
id = "a"
title = "A"
kind = "infra"
plan_doc = "a.md"
requires = "root:decided"

[[levers]]
id = "b"
title = "B"
kind = "infra"
plan_doc = "b.md"
requires = "root:adopt"

[[levers]]
id = "a1"
title = "a one"
kind = "speedup"
plan_doc = "x.md"
requires = "a:decided"

[[levers]]
id = "a2"
title = "a two"
kind = "speedup"
plan_doc = "x.md"
requires = ["a:decided", "root:decided"]

[[levers]]
id = "b1"
title = "b one with a label long enough that three of them never fit on one line"
kind = "speedup"
plan_doc = "x.md"
requires = "b:decided"

[[levers]]
id = "b2"
title = "b two with a label long enough that three of them never fit on one line"
kind = "speedup"
plan_doc = "x.md"
requires = "b:decided"

[[levers]]
id = "b3"
title = "b three, 한글 label long enough that three of them never fit on one line"
kind = "speedup"
plan_doc = "x.md"
requires = { any = ["b:decided", "a:decided"] }
'''


def test_tree_layout_keeps_every_edge(tmp_path):
    path = tmp_path / "layout.toml"
    path.write_text(LAYOUT_PLAN, encoding="utf-8")
    p = plan_mod.load(path)
    doc = export.render(p, PlanMachine(p), {})
    (tree,) = code_blocks(doc)
    long = "label long enough that three of them never fit on one line"
    assert tree_edges(tree) == {
        ("Root", "A"), ("Root", "B"), ("A", "a one"), ("A", "a two"),
        ("B", f"b one with a {long}"), ("B", f"b two with a {long}"), ("B", f"b three, 한글 {long}"),
    }
    assert all(_width(line) <= FAN_WIDTH + 20 for line in tree)
    (chart,) = code_blocks(doc, "mermaid")
    body = [line.strip() for line in chart]
    assert 'l_root -->|"adopt"| l_b' in body
    assert 'l_a -.->|"decided"| l_b3' in body and 'l_b -.->|"decided"| l_b3' in body
    assert 'l_root -->|"decided"| l_a2' in body


# -- through the real store -------------------------------------------------------------------------------------
def test_export_through_the_sequencer_and_store(tmp_path):
    from optseq.state.sequencer import Sequencer

    with Sequencer.open(DEFAULT_PLAN, tmp_path / "state", mode="write") as seq:
        assert table_rows(seq.views.export(), "Pending levers") == SEED_TABLE
        seq.actions.record_criterion("julia_port", "torch_jl", "c4", "fail", "0.8x of PyTorch")
        doc = seq.views.export()
    assert not any(row.startswith("| **Julia port** |") for row in table_rows(doc, "Pending levers"))
    assert re.search(r"^- ✅ Julia port: NO-GO \(\d{4}-\d\d-\d\d, 자동: .*c4 fail.*\)$", doc, re.M)
    assert re.search(r"^- Torch\.jl 결과 들어올 때 \(Julia 트랙 closed/branched\) — \d{4}-\d\d-\d\d 발생",
                     doc, re.M)
    assert "   ├── GO → port 작업 (큰 분기) — closed" in code_blocks(doc)[0]


def test_a_remeasured_prior_moves_to_history(plan):
    r = Replay(plan)
    r.add("decisions", "2026-07-01T00:00:00Z", lever="cython_bot", outcome="adopt", auto=True, why="",
          runs=[3], stats={"estimate": 2.61, "ci_low": 2.5, "ci_high": 2.7, "n": 5, "p_value": 0.03,
                           "metric": "opponent_act_calls_per_s"})
    doc = r.render(lang="en")
    results = section(doc, "Results")
    assert table_rows(doc, "Results")[2] == ("| **Cython bot** (opponent_act) | adopt | opponent_act_calls_per_s | "
                                             "2.61× | [2.50, 2.70] | 5 | 0.030 | 2026-07-01 | auto |  |")
    assert results[results.index("### History") + 2:] == ["- **Cython bot** (opponent_act): adopt 2.55× (plan)"]
    assert section(doc, "Current status")[5] == "- ✅ Cython bot: adopt 2.61× [2.50, 2.70] (2026-07-01, auto)"


# -- Mermaid node ids ---------------------------------------------------------------------------------------------
ADVERSARIAL_IDS = ["p_q", "p_q_2", "p-q", "p__q", "p_hq", "x_p_hq", "p-q-2", "end", "graph", "class", "style",
                   "subgraph", "flowchart", "v", "o", "x", "1st", "모델"]
MERMAID_WORDS = {"end", "graph", "flowchart", "subgraph", "class", "classDef", "style", "linkStyle", "click",
                 "default", "call", "href", "direction", "v", "o", "x"}


FACTS = ["end", "dense eval", "p-q"]


@pytest.mark.parametrize("ids, facts", [
    (ADVERSARIAL_IDS, FACTS), (ADVERSARIAL_IDS[::-1], FACTS),
    (["p_q_3", "p_q", "p-q"], []),  # a numbered suffix for the second `p_q` was the first lever's id
    (["p_q", "p-q", "p_q_2"], []),
], ids=["adversarial", "reversed", "suffix-taken", "suffix-like-an-id"])
def test_mermaid_ids_are_unique_for_any_lever_ids(tmp_path, ids, facts):
    gate = ", ".join(['"root:adopt"'] + [f'"fact:{f}"' for f in facts])
    levers = "".join(f'\n[[levers]]\nid = "{lid}"\ntitle = "T{i}"\nkind = "speedup"\nplan_doc = "x.md"\n'
                     f"requires = [{gate}]\n" for i, lid in enumerate(ids))
    path = tmp_path / "ids.toml"
    path.write_text('[plan]\ntitle = "Ids"\nas_of = 2026-01-01\n' + "".join(f'[facts."{f}"]\n' for f in facts)
                    + '\n[[levers]]\nid = "root"\ntitle = "Root"\nkind = "infra"\nplan_doc = "x.md"\n' + levers,
                    encoding="utf-8")
    p = plan_mod.load(path)
    (chart,) = code_blocks(export.render(p, PlanMachine(p), {}), "mermaid")
    nodes = {}
    for line in chart[1:]:
        found = re.fullmatch(r"    (\S+?)(\[|\(\[)\"(.*)\"(\]|\]\))", line)
        if found:
            assert found[1] not in nodes, f"two nodes share the id {found[1]}"
            nodes[found[1]] = found[3]
    # one node per lever and per fact, each under an id of its own that names it and nothing else
    titles = ["Root"] + [f"T{i}" for i in range(len(ids))]
    fact_labels = [f"fact: {f} = false" for f in facts]
    assert sorted(nodes.values()) == sorted(titles + fact_labels)
    for node in nodes:
        assert re.fullmatch(r"[lf]x?_[A-Za-z0-9_]+", node), node
        assert node not in MERMAID_WORDS
    by_title = {label: node for node, label in nodes.items()}
    edges = [line.split() for line in chart if "-->" in line]
    assert len(edges) == (1 + len(facts)) * len(ids)
    for i, lid in enumerate(ids):
        into = {e[0] for e in edges if e[-1] == by_title[f"T{i}"]}
        assert into == {by_title["Root"], *(by_title[f] for f in fact_labels)}, lid
    for line in chart:
        if line.startswith("    class "):
            assert set(line.split()[1].split(",")) <= set(nodes), line


def test_a_long_history_lists_the_newest_decisions_and_counts_the_rest(tmp_path):
    from optseq.state.sequencer import Sequencer
    from tests.conftest import DEFAULT_PLAN

    with Sequencer.open(DEFAULT_PLAN, tmp_path / "db", mode="write") as seq:
        for i in range(15):
            seq.actions.decide("amp", "defer" if i % 2 else "reject", f"round {i}")
        doc = seq.views.export(lang="en")
    history = [line for line in doc.splitlines() if line.startswith("- **AMP** trainer:")]
    assert len(history) == 1 + HISTORY_PER_LEVER  # 14 superseded: the newest ten and a count
    assert history[0] == "- **AMP** trainer: 4 earlier decisions (`optseq runs amp`)"
    assert "round 13" in history[-1] and "round 3" not in doc
