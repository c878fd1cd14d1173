"""`optseq validate` says every problem of a plan at once, a line each naming file, key, value and line, with a
"did you mean" for a misspelled key or lever; it refuses a tolerance that guards nothing or is malformed, and warns of
a rule whose first look cannot decide (issue 38: validate's items). Through the CLI, on plans written here."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ, ROOT

HEAD = '[plan]\ntitle = "All at once"\nas_of = 2026-12-06\n'
WORKLOAD = '''
[workload]
command = ["python", "bench.py"]
metric = { name = "items_per_s", unit = "items/s", regex = 'items_per_s=([0-9.]+)' }
'''
ARMS_LEVER = '''
[[levers]]
id = "fast_sum"
title = "Fast sum"
kind = "speedup"
arms = {{ candidate_args = ["--fast"] }}
rule = {{ metric = "items_per_s", repeats = {repeats}, max_repeats = {most} }}
'''


def validate(tmp_path: Path, text: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([*OPTSEQ, *extra, "validate", str(path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def line_of(text: str, written: str) -> int:
    """The line `written` first appears on."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if written in line)


def lines(proc: subprocess.CompletedProcess) -> list[str]:
    return proc.stderr.splitlines()


def test_every_problem_is_said_at_once_a_line_each_and_the_first_is_what_every_command_says(tmp_path):
    text = HEAD.replace("title =", "titel =") + '''
[facts]
gpu = { description = "a GPU here", value = true }

[compare]
tolerance = "100%"

[[levers]]
id = "fast_sum"
title = "Fast sum"
kind = "speedup"
run = ["python", "bench.py"]
rule = { metric = "items_per_s", mni_speedup = 1.1 }

[[levers]]
id = "other"
title = "Other"
kind = "speedpu"

[[levers]]
id = "third"
title = "Third"
kind = "infra"
requires = ["fastsum:adopt", "fact:gpus"]
remeasure_when = ["other"]
'''
    proc = validate(tmp_path, text)
    assert proc.returncode == 2 and proc.stdout == ""
    path = tmp_path / "plan.toml"
    said = lines(proc)
    assert said == [
        f"optseq: {path}: plan.titel: unknown key (did you mean 'title'?) (line {line_of(text, 'titel')})",
        f"optseq: {path}: levers.fast_sum.rule.mni_speedup: unknown key (did you mean 'min_speedup'?) "
        f"(line {line_of(text, 'mni_speedup')})",
        f"optseq: {path}: levers.other.kind: unknown kind 'speedpu' (did you mean 'speedup'?) (one of decision, "
        f"infra, experiment, speedup) (line {line_of(text, 'speedpu')})",
        f"optseq: {path}: compare.tolerance: tolerance '100%': expected more than 0% and at most 50% (a larger one "
        f"lets HEAD take more than 1.5× BASE's time and pass: no gate) (line {line_of(text, '100%')})",
        f"optseq: {path}: levers.third.requires: unknown lever 'fastsum' (did you mean 'fast_sum'?) "
        f"(line {line_of(text, 'fastsum')})",
        f"optseq: {path}: levers.third.requires: unknown fact 'gpus' (did you mean 'gpu'?) (declare it under "
        f"[facts]) (line {line_of(text, 'fastsum')})",
    ], said  # `title` is not also missing (its misspelling says it), nor `other` unknown (its own table is at fault)

    # a command that loads the plan stops at the first, as before
    status = subprocess.run([*OPTSEQ, "--plan", str(path), "status"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert status.returncode == 2 and status.stderr.splitlines() == said[:1], status.stderr


@pytest.mark.parametrize("written, meant, where", [
    ('remeasure_when = ["fastsum"]', "fast_sum", "levers.b.remeasure_when"),
    ('requires = "fast-sum:adopt"', "fast_sum", "levers.b.requires"),
    ('requires = "fast_sum:adpot"', "adopt", "levers.b.requires"),
    ('requires = "fact:gpu_hre"', "gpu_here", "levers.b.requires"),
])
def test_a_misspelled_lever_or_outcome_gets_a_did_you_mean(tmp_path, written, meant, where):
    text = HEAD + WORKLOAD + '[facts]\ngpu_here = { description = "a GPU here" }\n' + ARMS_LEVER.format(
        repeats=10, most=40) + f'''
[[levers]]
id = "b"
title = "B"
kind = "speedup"
run = ["python", "bench.py"]
{written}
'''
    proc = validate(tmp_path, text)
    assert proc.returncode == 2
    [line] = lines(proc)
    assert f": {where}: " in line and f"(did you mean {meant!r}?)" in line, line


def test_a_misspelled_table_is_one_problem_not_two(tmp_path):
    text = HEAD + WORKLOAD + ARMS_LEVER.format(repeats=10, most=40).replace("[[levers]]", "[[lever]]")
    proc = validate(tmp_path, text)
    assert proc.returncode == 2
    [line] = lines(proc)  # not `levers: missing` as well
    assert line.endswith(f": lever: unknown key (did you mean 'levers'?) (line {line_of(text, '[[lever]]')})"), line


def test_a_misspelled_workload_command_is_one_problem_not_one_a_lever(tmp_path):
    text = HEAD + WORKLOAD.replace("command =", "comand =") + ARMS_LEVER.format(repeats=10, most=40)
    proc = validate(tmp_path, text)
    assert proc.returncode == 2
    [line] = lines(proc)  # not `workload.command: missing`, nor the arms that change it
    assert line.endswith(f": workload.comand: unknown key (did you mean 'command'?) (line {line_of(text, 'comand')})")


@pytest.mark.parametrize("value, problem", [
    ('"100%"', "tolerance '100%': expected more than 0% and at most 50%"),
    ("1.0", "a bare number is a fraction"),
    ('"60%"', "tolerance '60%': expected more than 0% and at most 50%"),
    ('"5 %"', "tolerance '5 %': expected a fraction such as 0.03 or a percentage such as 3% (write '5%', no space)"),
    ('" 5%"', "(write '5%', no space)"),
    ('"5%%"', "tolerance '5%%': expected a fraction such as 0.03 or a percentage such as 3%"),
])
def test_a_tolerance_that_guards_nothing_or_is_malformed_is_refused_in_one_line(tmp_path, value, problem):
    proc = validate(tmp_path, HEAD + WORKLOAD + f"\n[compare]\ntolerance = {value}\n"
                    + ARMS_LEVER.format(repeats=10, most=40))
    assert proc.returncode == 2
    [line] = lines(proc)
    assert ": compare.tolerance: " in line and problem in line and "(line 10)" in line, line


@pytest.mark.parametrize("value", ['"3%"', "0.03", '"50%"', '"2.5%"', "0.5"])
def test_the_documented_tolerances_pass(tmp_path, value):
    proc = validate(tmp_path, HEAD + WORKLOAD + f"\n[compare]\ntolerance = {value}\n"
                    + ARMS_LEVER.format(repeats=10, most=40))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_rule_whose_first_look_cannot_decide_is_warned_of(tmp_path):
    # 6 pairs under a budget of 40: the sign test needs 7 all on one side, so no first look can decide
    proc = validate(tmp_path, HEAD + WORKLOAD + "\n[compare]\nrepeats = 6\n" + ARMS_LEVER.format(repeats=6, most=40))
    assert proc.returncode == 0 and "ok (1 levers" in proc.stdout
    path = tmp_path / "plan.toml"
    assert lines(proc) == [
        f"optseq: warning: {path}: levers.fast_sum.rule.repeats: 6 pairs cannot decide at the first look: under a "
        f"budget of 40 pairs (max_repeats) the sign test needs 7 all on one side, so every run measures a second "
        f"pass; repeats = 7 decides at the first",
        f"optseq: warning: {path}: compare.repeats: 6 pairs cannot decide at the first look: under a budget of 160 "
        f"pairs (max_repeats) the sign test needs 9 all on one side, so every run measures a second pass; "
        f"repeats = 9 decides at the first",
    ], proc.stderr

    proc = validate(tmp_path, HEAD + WORKLOAD + "\n[compare]\nrepeats = 9\n" + ARMS_LEVER.format(repeats=7, most=40))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_budget_no_look_can_decide_in_is_warned_of(tmp_path):
    proc = validate(tmp_path, HEAD + WORKLOAD + ARMS_LEVER.format(repeats=3, most=4))
    assert proc.returncode == 0
    [line] = lines(proc)
    assert "levers.fast_sum.rule.max_repeats: no look can decide: under a budget of 4 pairs" in line, line


SHIPPED = [ROOT / "configs" / "sequencing.toml", ROOT / "configs" / "starter" / "optseq.toml",
           *sorted((ROOT / "configs" / "examples").glob("*/plan.toml"))]


@pytest.mark.parametrize("plan", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_shipped_plans_validate_without_a_warning(plan):
    proc = subprocess.run([*OPTSEQ, "validate", str(plan)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_misspelled_command_or_lever_on_the_command_line_gets_a_did_you_mean(tmp_path):
    def said(*argv: str) -> str:
        proc = subprocess.run([*OPTSEQ, "--plan", str(ROOT / "configs" / "sequencing.toml"), "--db",
                               str(tmp_path / "db"), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        [line] = proc.stderr.splitlines()
        return line

    assert "invalid choice: 'statsu'" in said("statsu") and "(did you mean 'status'?)" in said("statsu")
    assert "unknown lever 'cyton_bot' (did you mean 'cython_bot'?)" in said("check", "cyton_bot")
    assert "did you mean" not in said("check", "zzz")  # nothing close: no guess


def test_a_default_repeats_is_warned_of_as_a_default_not_as_a_key_the_plan_has(tmp_path):
    # the default 5 pairs under a budget of 40: the warning names the rule table, says the key is not written and
    # what to write, instead of pointing at a `repeats` the file does not have
    lever = ARMS_LEVER.format(repeats=6, most=40).replace("repeats = 6, ", "")
    assert " repeats" not in lever and "max_repeats = 40" in lever
    proc = validate(tmp_path, HEAD + WORKLOAD + lever)
    assert proc.returncode == 0 and "ok (1 levers" in proc.stdout
    [line] = lines(proc)
    assert line == (f"optseq: warning: {tmp_path / 'plan.toml'}: levers.fast_sum.rule: repeats is not written, and its "
                    f"default of 5 pairs cannot decide at the first look: under a budget of 40 pairs (max_repeats) the "
                    f"sign test needs 7 all on one side, so every run measures a second pass; write repeats = 7 to "
                    f"decide at the first"), line
