"""`python -m optseq.engine.bench gpu-check`: its own section of docs/performance.md, real figures, a computed verdict."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from optseq.engine.bench.gpu_check import (
    MIN_STEP_S,
    SECTION,
    TOLERANCE,
    Step,
    StepResult,
    plan,
    run_child,
    step_timeout,
    verdict,
    write_section,
)
from optseq.engine.bench.model_size import PLANS, config_name
from optseq.engine.bench.report import ab_summaries, kept_section, parse_lines, run_all

# on one parallel worker (make test runs pytest -n): one real gpu-check run is read by the module
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpu_check")]  # real gpu-check runs

ROOT = Path(__file__).resolve().parents[2]
SMALL, LARGE = (16, 2), (64, 3)
ROW = re.compile(r"^\| (amp|compile) \| (h\d+x\d+) \| (\S+) \| ([\d.]+)× \| ([\d.]+)–([\d.]+) \| (\d+) \|"
                 r" .* \| (1 ok|failed: \w+) \| [\d.]+ \|$")


def bench(*argv, timeout=1800):
    """The real gpu-check; `timeout` only guards against a hang, it is no time budget."""
    env = dict(os.environ)
    env.pop("OPTSEQ_INFRA", None)
    return subprocess.run([sys.executable, "-m", "optseq.engine.bench", "gpu-check", *argv], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def cpu_check(tmp_path_factory):
    """One real gpu-check on the CPU, tiny: written into a copy of the repo's docs/performance.md."""
    tmp = tmp_path_factory.mktemp("gpu-check")
    doc, raw = tmp / "performance.md", tmp / "raw.jsonl"
    before = (ROOT / "docs" / "performance.md").read_text()
    doc.write_text(before)
    # a budget that never binds: how the budget shares out is test_budget_shares_roll_on_to_later_steps's
    # business, and a loaded machine must not cut a step short here
    proc = bench("--device", "cpu", "--size", "ci", "--repeats", "2", "--warmup", "0", "--models", "16x2,64x3",
                 "--model-size-iterations", "1", "--budget-s", "36000", "--write", str(doc), "--raw", str(raw))
    return proc, before, doc, raw


def table_rows(section: str) -> dict[tuple[str, str], re.Match]:
    return {(m[1], m[2]): m for line in section.splitlines() if (m := ROW.match(line))}


def test_cpu_run_writes_its_section_and_keeps_the_others(cpu_check):
    proc, before, doc, _ = cpu_check
    assert proc.returncode == 0, proc.stderr
    after = doc.read_text()
    for key in ("ci", "gpu"):
        assert kept_section(before, key) is not None
        assert kept_section(after, key) == kept_section(before, key)
    section = kept_section(after, SECTION)
    assert section is not None and after.count(f"<!-- section:{SECTION} -->") == 1
    assert "- device: cpu; torch " + torch.__version__ in section
    assert "no GPU" in section and "bench size `ci`" in section
    assert "--models 16x2,64x3" in section  # the regenerate command is the one that ran


def test_table_has_a_row_per_lever_and_model_from_the_raw_samples(cpu_check):
    _, _, doc, raw = cpu_check
    rows = table_rows(kept_section(doc.read_text(), SECTION))
    assert sorted(rows) == [("amp", "h16x2"), ("amp", "h64x3"), ("compile", "h16x2"), ("compile", "h64x3")]
    records = {r["step"]: r for r in map(json.loads, raw.read_text().splitlines())}
    assert sorted(records) == ["amp h16x2", "amp h64x3", "compile h16x2", "compile h64x3", "model_size"]
    for (lever, model), row in rows.items():
        assert row[3] == "succeeded" and row[7] == "2"
        record = records[f"{lever} {model}"]
        assert json.loads(record["env"]["OPTSEQ_INFRA"])["model"] == dict(zip(("hidden", "layers"),
                                                                                map(int, model[1:].split("x"))))
        (summary,) = ab_summaries(record["events"])
        assert float(row[4]) == pytest.approx(summary.median, abs=5e-4)
        assert float(row[5]) == pytest.approx(min(summary.ratios), abs=5e-4)
        assert float(row[6]) == pytest.approx(max(summary.ratios), abs=5e-4)


def test_verdict_sentence_follows_the_measured_ratios(cpu_check):
    _, _, doc, raw = cpu_check
    section = kept_section(doc.read_text(), SECTION)
    records = {r["step"]: r for r in map(json.loads, raw.read_text().splitlines())}
    median = {step: ab_summaries(r["events"])[0].median for step, r in records.items() if step != "model_size"}
    holds = {lever: median[f"{lever} h16x2"] <= 1 + TOLERANCE and median[f"{lever} h64x3"] > 1 + TOLERANCE
             for lever in ("amp", "compile")}
    expected = ("reproduces" if all(holds.values()) else "does not reproduce" if not any(holds.values())
                else "partly reproduces")
    (sentence,) = [line for line in section.splitlines() if line.startswith("Seed's claim")]
    assert f"**{expected}" in sentence
    for lever, title in (("amp", "AMP"), ("compile", "compile")):
        small, large = median[f"{lever} h16x2"], median[f"{lever} h64x3"]
        assert f"{title} {small:.2f}× at h16x2 and {large:.2f}× at h64x3" in sentence


def test_model_size_table_has_every_config(cpu_check):
    _, _, doc, _ = cpu_check
    section = kept_section(doc.read_text(), SECTION)
    assert "### model_size (1 iteration per config" in section
    for h, l in PLANS["ci"].configs:
        row = re.search(rf"^\| {config_name(h, l)} \| ([\d.e+-]+) \| ([\d.e+-]+) \|$", section, flags=re.M)
        assert row is not None, config_name(h, l)
        assert float(row[1]) > 0 and 0 <= float(row[2]) < 13  # Leduc: never more than 13 chips lost


def test_all_keeps_the_gpu_check_section(cpu_check, tmp_path):
    _, _, doc, _ = cpu_check
    out = tmp_path / "performance.md"
    out.write_text(doc.read_text())
    assert run_all(["tensorrt"], "ci", str(out), ["--repeats=1", "--warmup=0"]) == 0
    rerun = out.read_text()
    assert kept_section(rerun, SECTION) == kept_section(doc.read_text(), SECTION)
    assert "| tensorrt |" in kept_section(rerun, "ci") and "| cython_bot |" not in kept_section(rerun, "ci")


def test_writing_again_replaces_the_section(tmp_path):
    path = tmp_path / "docs" / "performance.md"
    write_section(path, f"<!-- section:{SECTION} -->\nfirst\n<!-- /section:{SECTION} -->")
    assert kept_section(path.read_text(), "ci") is not None  # a new file gets the other sections, empty
    write_section(path, f"<!-- section:{SECTION} -->\nsecond\n<!-- /section:{SECTION} -->")
    text = path.read_text()
    assert "second" in text and "first" not in text and text.count(f"<!-- section:{SECTION} -->") == 1


def fake_run(lever, ratio, guard_ok=True):
    lines = ['{"event": "env", "device": "cpu"}']
    for pair, r in enumerate((ratio * 0.9, ratio, ratio * 1.1)):
        for arm, value in (("baseline", 100.0), ("candidate", 100.0 * r)):
            lines.append(json.dumps({"event": "sample", "arm": arm, "metric": "train_samples_per_s", "value": value,
                                     "unit": "samples/s", "higher_is_better": True, "pair": pair}))
    lines.append(json.dumps({"event": "quality", "name": "loss_delta", "value": 0.001 if guard_ok else 0.5,
                             "limit": 0.01}))
    lines.append('{"event": "done"}')
    return parse_lines(lever, lines)


def results_with(ratios, bad_guard=None, cut_off=None):
    """StepResults for amp/compile at SMALL/LARGE with these median ratios (None: the step failed)."""
    out = []
    for lever in ("amp", "compile"):
        for model, key in ((SMALL, "small"), (LARGE, "large")):
            ratio = ratios[(lever, key)]
            run = fake_run(lever, ratio or 1.0, guard_ok=bad_guard != (lever, key))
            if ratio is None:
                run.returncode = 1
            if cut_off == (lever, key):  # killed at its timeout: no guard, no done, whole pairs kept
                run.quality, run.done, run.returncode = [], False, None
            out.append(StepResult(Step(lever, model, 1.0), run, timed_out=cut_off == (lever, key)))
    return out


def ratios(amp_small, amp_large, compile_small, compile_large):
    return {("amp", "small"): amp_small, ("amp", "large"): amp_large,
            ("compile", "small"): compile_small, ("compile", "large"): compile_large}


def test_verdict_from_figures():
    assert "**reproduces**" in verdict(results_with(ratios(0.8, 2.5, 1.02, 1.4)), SMALL, LARGE)
    no = verdict(results_with(ratios(1.3, 2.5, 0.8, 0.9)), SMALL, LARGE)
    assert "**does not reproduce**" in no
    assert "AMP 1.30× at h16x2 and 2.50× at h64x3 (a gain already at h16x2)" in no
    assert "compile 0.80× at h16x2 and 0.90× at h64x3 (no gain at h64x3)" in no
    partly = verdict(results_with(ratios(0.9, 3.0, 0.9, 1.0)), SMALL, LARGE)
    assert "**partly reproduces: for AMP; not for compile**" in partly
    missing = verdict(results_with(ratios(0.9, None, None, None)), SMALL, LARGE)
    assert "**cannot be judged yet**" in missing
    assert "AMP: no figures at h64x3" in missing and "compile: no figures at h16x2 and h64x3" in missing
    guarded = verdict(results_with(ratios(0.8, 2.5, 0.9, 1.4), bad_guard=("amp", "large")), SMALL, LARGE)
    assert "guard failed at h64x3: loss_delta" in guarded
    one_judged = verdict(results_with(ratios(0.9, None, 0.9, 1.0)), SMALL, LARGE)
    assert "**does not reproduce for compile; AMP not judged**" in one_judged
    assert "**reproduces for AMP; compile not judged**" in verdict(results_with(ratios(0.9, 3.0, None, 1.2)),
                                                                   SMALL, LARGE)
    cut = verdict(results_with(ratios(0.8, 2.5, 0.9, 1.4), cut_off=("compile", "large")), SMALL, LARGE)
    assert "**reproduces**" in cut
    assert "compile 0.90× at h16x2 and 1.40× at h64x3 (cut off at h64x3 after 3 pairs)" in cut


def test_budget_shares_roll_on_to_later_steps():
    steps = plan(SMALL, LARGE)
    assert [s.name for s in steps] == ["amp h16x2", "amp h64x3", "compile h16x2", "compile h64x3", "model_size"]
    first = step_timeout(steps, 0, 420.0)
    assert first == pytest.approx(420.0 * steps[0].weight / sum(s.weight for s in steps))
    # A step that used little leaves more to each later one; the last step gets all that is left.
    assert step_timeout(steps, 1, 410.0) > step_timeout(steps, 1, 420.0 - first)
    assert step_timeout(steps, len(steps) - 1, 123.0) == pytest.approx(123.0)
    # A tight budget still gives the first (most important) steps a usable timeout.
    assert step_timeout(steps, 0, 40.0) == MIN_STEP_S and step_timeout(steps, 0, 10.0) == 10.0


def test_a_budget_too_small_skips_every_step(tmp_path):
    doc = tmp_path / "performance.md"
    proc = bench("--device", "cpu", "--budget-s", "10", "--write", str(doc), timeout=60)
    assert proc.returncode == 1
    section = kept_section(doc.read_text(), SECTION)
    assert section.count("skipped: budget spent") == 5
    assert "**cannot be judged yet**" in section


def test_a_child_past_its_timeout_is_killed_with_its_group_and_its_output_kept():
    code = ("import json, subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print(json.dumps({'event': 'env', 'grandchild': p.pid}), flush=True)\n"
            "print(json.dumps({'event': 'sample', 'arm': 'h16x2', 'metric': 's_per_iter', 'value': 0.5,"
            " 'unit': 's', 'higher_is_better': False, 'pair': 0}), flush=True)\n"
            "time.sleep(60)\n")
    # the child prints before it sleeps; 20 s leaves a loaded machine time to start Python and get there
    run, timed_out = run_child([sys.executable, "-c", code], dict(os.environ), 20.0, "model_size")
    assert timed_out
    assert run.returncode is None and run.status == "failed"
    assert [s["value"] for s in run.samples] == [0.5]
    assert run.log[-1] == "timed out after 20 s"
    stat = Path(f"/proc/{run.env['grandchild']}/stat")
    # the kill is sent before run_child returns; the kernel may take a moment to reap: wait for that
    # event (a ceiling against a hang, not a time budget)
    deadline = time.monotonic() + 60
    while stat.exists() and stat.read_text().split(") ")[1][0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not stat.exists() or stat.read_text().split(") ")[1][0] == "Z"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA refusal")
def test_without_cuda_it_refuses_unless_cpu_is_named(tmp_path):
    doc = tmp_path / "performance.md"
    proc = bench("--write", str(doc), timeout=60)
    assert proc.returncode == 2 and not doc.exists()
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("optseq.engine.bench gpu-check: no CUDA device here") and "--device cpu" in line


def test_unwritable_output_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = bench("--device", "cpu", "--raw", str(blocker / "raw.jsonl"), timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("optseq.engine.bench gpu-check: ") and str(blocker / "raw.jsonl") in line


def test_bad_models_is_one_line_error():
    proc = bench("--device", "cpu", "--models", "64x3", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "optseq.engine.bench gpu-check: --models '64x3': expected SMALL,LARGE as HIDDENxLAYERS, e.g. 64x3,1024x6"]
