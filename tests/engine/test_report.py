"""docs/performance.md from bench output: parsing protocol lines, per-pair ratios, the rendered document."""
from __future__ import annotations

import json

import pytest
import torch

from optseq.engine.bench.report import (
    NO_GPU,
    ab_summaries,
    config_table,
    kept_section,
    parse_lines,
    render_document,
    run_all,
)

ENV = ('{"event": "env", "python": "3.11.7", "torch": "2.13.0+cpu", "device": "cpu", "cpu": "AMD EPYC", '
       '"threads": 2}')


def sample(arm, value, pair, metric="train_samples_per_s", unit="samples/s", higher=True):
    return json.dumps({"event": "sample", "arm": arm, "metric": metric, "value": value, "unit": unit,
                       "higher_is_better": higher, "pair": pair})


# Shaped like a real amp run: env, log lines, alternating samples with progress, a guard, done.
AMP_LINES = [
    ENV,
    "amp: model MLPConfig(input_dim=24, hidden=64, layers=3, actions=3), batch 256",
    sample("baseline", 100.0, 0), sample("candidate", 150.0, 0),
    '{"event": "progress", "done": 1, "total": 3, "msg": "amp pair 1/3"}',
    sample("baseline", 200.0, 1), sample("candidate", 300.0, 1),
    "{not json, so a log line",
    sample("baseline", 100.0, 2), sample("candidate", 120.0, 2),
    sample("baseline", 999.0, 3),  # its candidate never came: the pair is incomplete
    '{"event": "quality", "name": "loss_delta", "value": 0.002, "limit": 0.01}',
    '{"event": "done"}',
]

LATENCY_LINES = [
    ENV,
    sample("baseline", 2.0, 0, "infer_latency_ms", "ms", False),
    sample("candidate", 1.0, 0, "infer_latency_ms", "ms", False),
    sample("baseline", 3.0, 1, "infer_latency_ms", "ms", False),
    sample("candidate", 4.0, 1, "infer_latency_ms", "ms", False),
    '{"event": "quality", "name": "tensorrt_max_abs_error", "value": 0.5, "limit": 0.001}',
    '{"event": "done"}',
]

TRT_LINES = [
    ENV,
    '{"event": "quality", "name": "onnx_max_abs_error", "value": 3.6e-07, "limit": 0.0001}',
    '{"event": "unavailable", "reason": "TensorRT needs CUDA and the tensorrt package: no CUDA device"}',
    '{"event": "done"}',
]

MODEL_SIZE_LINES = [
    ENV,
    sample("h16x2", 0.5, 0, "s_per_iter", "s", False), sample("h64x3", 0.9, 0, "s_per_iter", "s", False),
    sample("h16x2", 0.7, 1, "s_per_iter", "s", False), sample("h64x3", 1.1, 1, "s_per_iter", "s", False),
    sample("h16x2", 0.6, 2, "s_per_iter", "s", False), sample("h64x3", 1.3, 2, "s_per_iter", "s", False),
    sample("h16x2", 2.05, 0, "exploitability", "chips/hand", False),
    sample("h64x3", 1.75, 0, "exploitability", "chips/hand", False),
    '{"event": "done"}',
]

CRASH_LINES = [ENV, "Traceback (most recent call last):", "ModuleNotFoundError: No module named 'optseq.engine.bench.option_a'"]


def test_parse_sorts_events_from_log():
    run = parse_lines("amp", AMP_LINES)
    assert run.env["torch"] == "2.13.0+cpu"
    assert len(run.samples) == 7
    assert run.quality == [{"event": "quality", "name": "loss_delta", "value": 0.002, "limit": 0.01}]
    assert run.log == ["amp: model MLPConfig(input_dim=24, hidden=64, layers=3, actions=3), batch 256",
                       "{not json, so a log line"]
    assert run.done and run.status == "succeeded"


def test_status_from_events_and_exit_code():
    assert parse_lines("tensorrt", TRT_LINES).status == "unavailable"
    crashed = parse_lines("option_a", CRASH_LINES)
    crashed.returncode = 1
    assert crashed.status == "failed"
    no_done = parse_lines("amp", AMP_LINES[:-1])
    assert no_done.status == "failed"


def test_ratios_are_per_pair_and_oriented_so_higher_is_better():
    (throughput,) = ab_summaries(parse_lines("amp", AMP_LINES).samples)
    assert throughput.ratios == (1.5, 1.5, 1.2)  # the incomplete pair 3 is left out
    assert throughput.median == 1.5 and throughput.n == 3
    assert throughput.baseline_median == 100.0 and throughput.candidate_median == 150.0
    (latency,) = ab_summaries(parse_lines("tensorrt", LATENCY_LINES).samples)
    # Lower is better: baseline/candidate, so halving latency reads as 2x.
    assert latency.ratios == (2.0, 0.75)
    assert latency.median == pytest.approx(1.375)


def test_config_arms_are_tabled_by_median():
    arms, metrics, cells = config_table(parse_lines("model_size", MODEL_SIZE_LINES).samples)
    assert arms == ["h16x2", "h64x3"]
    assert metrics == ["s_per_iter", "exploitability"]
    assert cells[("h16x2", "s_per_iter")] == (0.6, 3, "s")
    assert cells[("h64x3", "s_per_iter")] == (1.1, 3, "s")
    assert cells[("h64x3", "exploitability")] == (1.75, 1, "chips/hand")


def render(previous=""):
    runs = []
    for lever, lines in (("amp", AMP_LINES), ("tensorrt", TRT_LINES), ("model_size", MODEL_SIZE_LINES),
                         ("option_a", CRASH_LINES), ("latency", LATENCY_LINES)):
        run = parse_lines(lever, lines)
        run.returncode = 1 if lever == "option_a" else 0
        runs.append(run)
    return render_document("ci", runs, "python -m optseq.engine.bench all --size ci --write docs/performance.md",
                           "2026-11-29 16:00 UTC", previous)


def test_document_has_every_figure_the_runs_gave():
    doc = render()
    assert "| amp | succeeded | train_samples_per_s | 1.500× | 1.200–1.500 | 3 | 1 ok |" in doc
    assert "| latency | succeeded | infer_latency_ms | 1.375× | 0.750–2.000 | 2 | failed: tensorrt_max_abs_error |" in doc
    assert "| tensorrt | unavailable: TensorRT needs CUDA and the tensorrt package: no CUDA device |" in doc
    assert "`onnx_max_abs_error` = 3.600e-07 (limit 1.000e-04): ok" in doc
    assert "`tensorrt_max_abs_error` = 0.5 (limit 0.001): **FAILED**" in doc
    assert "| model_size | succeeded | 2 configs, table below | — | — | — | — |" in doc
    assert "| h16x2 | 0.6 (median of 3) | 2.05 |" in doc
    assert "| h64x3 | 1.1 (median of 3) | 1.75 |" in doc
    assert "ModuleNotFoundError: No module named 'optseq.engine.bench.option_a'" in doc
    assert "**failed** (exit 1" in doc
    assert "CPU AMD EPYC, 2 torch threads, no GPU, torch 2.13.0+cpu" in doc
    assert "2026-11-29 16:00 UTC" in doc
    assert "`python -m optseq.engine.bench all --size ci --write docs/performance.md`" in doc
    assert NO_GPU in kept_section(doc, "gpu")


def test_a_cpu_rerun_keeps_gpu_figures_measured_before():
    gpu_section = "<!-- section:gpu -->\n## GPU, GPU size\n\n| amp | succeeded | 2.100× |\n<!-- /section:gpu -->"
    previous = "# Performance\n\n<!-- section:ci -->\nold\n<!-- /section:ci -->\n\n" + gpu_section + "\n"
    doc = render(previous)
    assert kept_section(doc, "gpu") == gpu_section
    assert "old" not in kept_section(doc, "ci")


def test_a_rerun_keeps_the_sections_other_commands_write():
    decisions = "<!-- section:decisions -->\n## Decision quality (simulated)\n\n| A/A |\n<!-- /section:decisions -->"
    check = "<!-- section:gpu-check -->\n## GPU check\n<!-- /section:gpu-check -->"
    doc = render("# Performance\n\n" + check + "\n\n" + decisions + "\n")
    assert kept_section(doc, "decisions") == decisions and kept_section(doc, "gpu-check") == check
    assert doc.count("<!-- section:decisions -->") == 1


@pytest.mark.slow  # a real bench
def test_all_runs_a_real_bench_and_writes_the_file(tmp_path, capsys):
    out = tmp_path / "docs" / "performance.md"
    assert run_all(["tensorrt"], "ci", str(out), ["--repeats=1", "--warmup=0"]) == 0
    doc = out.read_text()
    ci = kept_section(doc, "ci")
    assert "| tensorrt | unavailable: " in ci or "| tensorrt | succeeded |" in ci
    assert "onnx_max_abs_error" in ci
    assert "python -m optseq.engine.bench all --size ci --repeats=1 --warmup=0 --write " + str(out) in ci
    assert "[all] tensorrt: " in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA refusal")
def test_all_at_gpu_size_refuses_without_cuda(tmp_path, capsys):
    out = tmp_path / "performance.md"
    assert run_all(["tensorrt"], "gpu", str(out)) == 2
    assert not out.exists()
    assert capsys.readouterr().err.strip() == "optseq.engine.bench all --size gpu: no CUDA device here; run it on a GPU machine"
