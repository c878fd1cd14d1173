"""The seed doc's export says one thing at a time (issue 38, point 10), through the CLI on the seed's plan: no
`(in progress now) ✅`, a fired point names the lever to look at again as the Korean does, and hours saved from a
ratio measured at CI size say so in the section's headline."""
from __future__ import annotations

import json
import re
import sys

import pytest

from tests.conftest import DEFAULT_PLAN
from tests.console.test_app import TINY_LEVER
from tests.console.test_runs_table import optseq


def seed_plan(tmp_path):
    """The seed's plan, with Option B measured by a stand-in that reports the reference workload at CI size."""
    argv = [sys.executable, str(TINY_LEVER), "--ratio", "1.8", "--metric", "advantage_samples_per_s",
            "--quality", "sample_mismatches=0:0", "--bench-size", "ci"]
    text, n = re.subn(r'run = \["python", "-m", "optseq.engine.bench", "option_b"\]', f"run = {json.dumps(argv)}",
                      DEFAULT_PLAN.read_text(encoding="utf-8"))
    assert n == 1
    path = tmp_path / "sequencing.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_settled_order_item_is_not_in_progress_and_a_fired_point_says_what_to_look_at_again(tmp_path, cli_env):
    env = {**cli_env, "OPTSEQ_PLAN": str(DEFAULT_PLAN)}
    fresh = optseq(env, "export", "--lang", "en").stdout
    assert "**1. Settle the Julia decision (in progress now)** — " in fresh  # the seed's words while undecided
    optseq(env, "record", "julia_port", "torch_jl", "c4", "fail", "--evidence", "0.8x of PyTorch")
    for lang, head, again in (
            ("en", "**1. Settle the Julia decision** ✅ — ", "; the lever to look at again: Option B;"),
            ("ko", "**1. Julia 결정 확정** ✅ — ", "; 다시 볼 lever: Option B;")):
        doc = optseq(env, "export", "--lang", lang).stdout
        assert head in doc, doc
        assert "(in progress now)" not in doc and "(지금 진행 중)" not in doc
        assert again in doc and "reopens" not in doc, doc


@pytest.mark.slow  # a lever run, each arm a process
def test_hours_saved_from_a_ci_size_ratio_say_so_in_the_headline(tmp_path, cli_env):
    env = {**cli_env, "OPTSEQ_PLAN": str(seed_plan(tmp_path))}
    optseq(env, "record", "julia_port", "torch_jl", "c4", "fail")
    (tmp_path / "option_b.md").write_text("# Option B\n", encoding="utf-8")
    optseq(env, "plan", "option_b", str(tmp_path / "option_b.md"))
    optseq(env, "--run", "option_b")
    doc = optseq(env, "export", "--lang", "en").stdout
    hours = doc[doc.index("## Hours saved"):doc.index("## Current status")]
    paragraphs = hours.split("\n\n")
    assert paragraphs[2].startswith("**Hours saved from a ratio measured at CI size**: the S of option_b is the "
                                    "reference workload's at CI size"), paragraphs[:3]  # before the table
    row = next(line for line in hours.splitlines() if line.startswith("| **Option B**"))
    assert re.match(r"\| \*\*Option B\*\* \(per-worker interleaved traversal\) \| 1\.\d\d× measured at CI size ",
                    row), row
    ko = optseq(env, "export", "--lang", "ko").stdout
    assert "**CI 크기에서 측정한 비율의 시간 절약**: option_b의 S는" in ko
