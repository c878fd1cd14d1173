"""`optseq whatif` in a subprocess on the default plan: the table, --json, and no textual or torch on its path."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import OPTSEQ


def optseq(cli_env, *args):
    proc = subprocess.run([*OPTSEQ, *args], env=cli_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def test_whatif_table_on_the_default_plan(cli_env):
    out = optseq(cli_env, "whatif")
    lines = out.splitlines()
    assert lines[0].startswith("hours saved: H = q · share · (1 − 1/S) · V − C")
    assert lines[1] == "volume: 48.3 h ahead at 30 s per iteration (declared, assumed)"
    assert any(line.split()[:2] == ["model_size", "4"] and "20.0 h" in line and "assumed: runs" in line
               for line in lines)
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["lever", "S"])
    table = lines[head + 1:lines.index("", head)]
    assert [line.split()[0] for line in table] == ["option_b", "amp", "compile", "tensorrt", "option_a", "port"]
    row = table[0]
    # S 1.3× prior, q 0.5 prior, share 0.8, V 48.3 h, C 0, H = 0.5 · 0.8 · (1 − 1/1.3) · 48.33 = 4.46 h, V* 0
    assert row.split() == ["option_b", "1.30×", "prior", "0.50", "prior", "0.8", "48.3", "0.00", "4.46", "0.00"]
    assert any(line.startswith("plan's order: option_b → model_size → ") for line in lines)
    assert any("option_b first holds, by 4.56 h" in line for line in lines)
    assert "missing inputs:" in lines
    assert any(line.startswith("  - amp: S and q: not measured and no prior") for line in lines)


def test_whatif_json_on_the_default_plan(cli_env):
    report = json.loads(optseq(cli_env, "whatif", "--json"))
    ob = next(lv for lv in report["levers"] if lv["id"] == "option_b")
    assert (ob["s"], ob["s_source"], ob["q_source"]) == (1.3, "prior", "prior")
    assert ob["h"] == pytest.approx(0.5 * 0.8 * (0.3 / 1.3) * 5800 * 30 / 3600)
    assert report["plan_order"]["order"][:2] == ["option_b", "model_size"]
    assert report["best_order"]["method"] == "every order" and report["agrees"] is True
    assert [s["holds"] for s in report["sequencing"]] == [True]
    assert "volume.s_per_iter = 30 s (assumed)" in report["assumptions"]


def test_whatif_and_status_carry_the_hours_and_load_neither_textual_nor_torch(cli_env):
    code = ("import sys, io, contextlib; from optseq.console.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['whatif']) == 0 and main(['whatif', '--json']) == 0\n"
            "print(sorted(m for m in ('textual', 'torch') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    status = json.loads(optseq(cli_env, "status", "--json"))
    hours = {lv["id"]: lv["hours_saved"] for lv in status["levers"]}
    assert hours["option_b"] == pytest.approx(0.5 * 0.8 * (0.3 / 1.3) * 5800 * 30 / 3600) and hours["amp"] is None
