"""A ratio far from 1 prints readably, by one rule, wherever optseq prints one (issue 38, point 10): a 3,000x
slowdown is not `0.000×`, a big gain not `46977.079× [19485.793, 54042.630]`."""
from __future__ import annotations

import re
import sys

import pytest

from optseq.state.text import ratio_text
from tests.console.test_runs_table import lever, optseq, table, write_plan
from tests.console.test_app import TINY_LEVER


@pytest.mark.parametrize("value, decimals, shown", [
    (1.4242, 2, "1.42"), (0.97, 2, "0.97"), (1.0114, 3, "1.011"), (0.974, 3, "0.974"),  # near 1: the place's decimals
    (1 / 3, 3, "0.333"), (87.64, 2, "87.6"), (120.4, 2, "120"), (4697.9, 2, "4698"),  # 3 significant figures
    (0.0333, 2, "0.0333"), (0.00333, 3, "0.00333"),
    (46977.079, 3, "4.70e4"), (19485.793, 2, "1.95e4"), (1 / 3000, 3, "3.33e-4"), (1e-7, 2, "1.00e-7"),  # powers
    (9.996, 2, "10.0"), (99.96, 2, "100"), (9999.6, 2, "1.00e4"), (0.0, 2, "0.00"), (-0.5, 2, "-0.50"),  # edges
])
def test_one_rule_for_every_ratio(value, decimals, shown):
    assert ratio_text(value, decimals) == shown


@pytest.mark.slow  # two lever runs, each arm a process
def test_the_cli_prints_far_ratios_readably(tmp_path, cli_env):
    plan = write_plan(tmp_path, lever("huge", [sys.executable, str(TINY_LEVER), "--ratio", "46977"]),
                      lever("crawl", [sys.executable, str(TINY_LEVER), "--ratio", "0.000333"]))
    env = {**cli_env, "OPTSEQ_PLAN": str(plan)}
    big, small = r"4\.\d\de4", r"3\.\d\de-4"  # the stand-in's rates are rounded: the figures, not their digits
    ran = optseq(env, "--run", "huge")
    assert re.search(rf"  {big}× \[{big}, {big}\] n=12", ran.stdout), ran.stdout
    ran = optseq(env, "--run", "crawl")
    assert re.search(rf"  {small}× \[{small}, {small}\] n=12", ran.stdout), ran.stdout
    rows = {row["lever"]: row for row in table(optseq(env, "runs").stdout)}
    assert re.fullmatch(rf"{big}× \[{big}, {big}\]", rows["huge"]["ratio [95% CI]"]), rows
    assert re.fullmatch(rf"{small}× \[{small}, {small}\]", rows["crawl"]["ratio [95% CI]"]), rows
    doc = optseq(env, "export").stdout
    assert re.search(rf"adopt {big}× \[{big}, {big}\] \(", doc), doc
    assert re.search(rf"reject {small}× \[{small}, {small}\] \(", doc), doc
    for text in (doc, optseq(env, "status").stdout):
        assert "0.00×" not in text and "0.000×" not in text and not re.search(r"\d{5}\.\d+×", text), text


FIXED_BEFORE_TIMES = re.compile(r"\{([^{}]*):\.\d+[fg]\}×")
"""A figure given a fixed precision right before its `×`: `{own:.3g}×` said 2.5e+03× of a 2,500× gain."""


def test_no_measured_ratio_is_printed_with_a_fixed_precision_of_its_own():
    """Every measured ratio goes through ratio_text; a plan's threshold (`min_speedup`) prints as the plan wrote
    it, and the benches write their own tables."""
    from tests.conftest import ROOT

    found = []
    for room in ("state", "console"):
        for path in sorted((ROOT / room).rglob("*.py")):
            if "bench" in path.relative_to(ROOT).parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{number}: {m.group(0)}" for m in FIXED_BEFORE_TIMES.finditer(line)
                          if not m.group(1).endswith("min_speedup")]
    assert not found, "\n".join(found)
