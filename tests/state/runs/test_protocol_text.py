"""A lever printing valid JSON with lone surrogates: its run is recorded whole, with U+FFFD for each.

Before, the store failed mid-write on such text: the run's statistics and decision were lost and
the run was left `interrupted`.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from optseq.state.runners.protocol import classify, clean_text
from tests.conftest import OPTSEQ
from tests.state.one_lever import one_lever_plan

LEVER = Path(__file__).parents[1] / "lever_scripts" / "surrogates.py"

DECISION_PLAN = """
[plan]
title = "Surrogates"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "julia"
title = "Julia port"
kind = "decision"
plan_doc = "eval.md"
run = {argv}
[levers.criteria]
criteria = [{{ id = "c1" }}, {{ id = "c2" }}]
candidates = [{{ id = "torch_jl", title = "Torch.jl" }}]
"""


def cli(env, *args, code=0) -> subprocess.CompletedProcess:
    proc = subprocess.run([*OPTSEQ, *args], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc


def plan_env(cli_env, tmp_path, template: str | None, mode: str) -> dict:
    """The CLI's environment on a plan whose lever runs the stand-in in `mode`: the one-lever speedup plan,
    or `template` filled in."""
    argv = [sys.executable, str(LEVER), "--mode", mode]
    if template is None:
        plan = one_lever_plan(tmp_path, argv, timeout=None, title="Surrogates")
    else:
        plan = tmp_path / "plan.toml"
        plan.write_text(template.format(argv=json.dumps(argv)), encoding="utf-8")
    return dict(cli_env, OPTSEQ_PLAN=str(plan))


def records_are_utf8(db: Path) -> None:
    files = [p for p in db.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert files
    for path in files:
        path.read_bytes().decode("utf-8")  # strict: a surrogate would have failed the write instead


def test_a_run_with_lone_surrogates_keeps_its_statistics_and_decision(cli_env, tmp_path, db):
    env = plan_env(cli_env, tmp_path, None, "speedup")
    summary = json.loads(cli(env, "--run", "lever", "--json").stdout)
    (run,) = summary["runs"]
    assert run["status"] == "succeeded" and run["decision"] == "adopt", run

    history = json.loads(cli(env, "runs", "--json").stdout)
    (stored,) = history["runs"]
    assert stored["status"] == "succeeded"  # not `interrupted`
    stats = stored["summary"]["stats"]
    assert stats["n"] == 12 and stats["launches"] == 6 and 1.45 < stats["estimate"] < 1.55
    assert "max_err\ufffd" in json.dumps(stored["summary"], ensure_ascii=False)
    assert stored["env"]["gpu"] == "\ufffd" and stored["env"]["\ufffd key"] == "x"
    assert stored["env"]["nested"] == {"list": ["\ufffd", 1]}
    samples = [json.loads(line) for line in Path(stored["samples_file"]).read_text(encoding="utf-8").splitlines()]
    assert len(samples) == 24 and {s["unit"] for s in samples} == {"items/\ufffds"}
    (decision,) = history["decisions"]
    assert decision["outcome"] == "adopt" and decision["runs"] == [stored["id"]]
    records_are_utf8(db)

    # the store stays whole: status reads it, a second run writes to it, export writes it out
    status = json.loads(cli(env, "status", "--json").stdout)
    assert status["levers"][0]["state"] == "adopted"
    again = json.loads(cli(env, "--run", "lever", "--json").stdout)["runs"][0]
    assert again["status"] == "succeeded"
    assert "adopt 1.5" in cli(env, "export").stdout


def test_criterion_events_with_lone_surrogates_are_recorded_or_refused_by_name(cli_env, tmp_path, db):
    env = plan_env(cli_env, tmp_path, DECISION_PLAN, "criteria")
    (run,) = json.loads(cli(env, "--run", "julia", "--json").stdout)["runs"]
    assert run["status"] == "succeeded"
    history = json.loads(cli(env, "runs", "--json").stdout)
    (c1,) = [c for c in history["criteria"] if c["criterion"] == "c1"]
    assert c1["evidence"] == "bench \ufffd host"
    # the mangled candidate is an unknown candidate, named with its U+FFFD, not a crash
    assert any("torch\ufffdjl" in note for note in history["runs"][0]["notes"]), history["runs"][0]
    records_are_utf8(db)
    status = json.loads(cli(env, "status", "--json").stdout)
    assert status["levers"][0]["criteria"]["torch_jl"]["results"] == {"c1": "pass", "c2": "pending"}


# -- the protocol's own guarantee, line by line ---------------------------------------------------------------------
@pytest.mark.parametrize("line, expected", [
    (r'{"event": "env", "gpu": "\ud800"}', {"event": "env", "gpu": "\ufffd"}),
    (r'{"event": "env", "\udfffk": ["\udc80", {"\ud83d": "\ude00"}]}',
     {"event": "env", "\ufffdk": ["\ufffd", {"\ufffd": "\ufffd"}]}),
    (r'{"event": "sample", "arm": "baseline", "value": 1, "pair": 0, "unit": "\ud800"}',
     {"event": "sample", "arm": "baseline", "value": 1, "pair": 0, "unit": "\ufffd"}),
    (r'{"event": "quality", "name": "n\udc00", "value": 0, "limit": 1}',
     {"event": "quality", "name": "n\ufffd", "value": 0, "limit": 1}),
    (r'{"event": "unavailable", "reason": "no \udbff GPU"}', {"event": "unavailable", "reason": "no \ufffd GPU"}),
    # a pair spelt as escapes is a real character, and an escaped backslash is no escape at all
    (r'{"event": "env", "face": "\ud83d\ude00", "path": "C:\\ud800"}',
     {"event": "env", "face": "\U0001f600", "path": "C:\\ud800"}),
])
def test_classify_replaces_every_lone_surrogate(line, expected):
    event, warning = classify(line)
    assert warning is None and event == expected
    json.dumps(event, ensure_ascii=False).encode("utf-8")  # storable


def test_clean_text_decodes_argv_bytes_again_and_leaves_good_text_alone():
    good = {"a": ["é", 1, None]}
    assert clean_text(good) == good
    text = "plain é"
    assert clean_text(text) is text
    assert clean_text("ok\udcff", undecoded=True) == "ok\ufffd"
    assert clean_text("\udcc3\udca9", undecoded=True) == "é"  # bytes C3 A9, taken apart by surrogateescape
    assert clean_text("\udcc3\udca9") == "\ufffd\ufffd"  # from JSON: each a lone surrogate
    assert clean_text(("\ud800", "\udcff"), undecoded=True) == ("\ufffd", "\ufffd")
