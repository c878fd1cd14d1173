"""A bad plan's one line names the line its key is written on (issue 32, point 3: the console's banner and the CLI
give the same line): keys in tables and inline tables, array elements, a lever named by its id, a duplicate id, a
missing key (the table it is missing from) and a syntax error (tomllib's line, quoted). Through `optseq validate`."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from optseq.state.plan.lines import key_lines
from tests.conftest import DEFAULT_PLAN, OPTSEQ

HEAD = '[plan]\ntitle = "Lines"\nas_of = 2026-12-04\nlang = "en"\n'
LEVER = '''
[[levers]]
id = "{id}"
title = "{id}"
kind = "speedup"
run = ["python", "bench.py"]
rule = {{ metric = "items_per_s", min_speedup = {min_speedup}, repeats = 6 }}
'''


def validate(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([*OPTSEQ, "validate", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.removeprefix("optseq: ").removesuffix("\n")
    assert "\n" not in line and line.startswith(f"{path}: "), line
    return line.removeprefix(f"{path}: ")


def line_of(text: str, written: str, after: int = 0) -> int:
    return text.splitlines().index(written, after) + 1


def two(a: str = "1.2", b: str = "1.2", b_id: str = "b") -> str:
    return HEAD + LEVER.format(id="a", min_speedup=a) + LEVER.format(id=b_id, min_speedup=b)


@pytest.mark.parametrize("text, key, written", [
    (two().replace('kind = "speedup"', 'kind = "speedupp"', 1), "levers.a.kind", 'kind = "speedupp"'),
    # the second lever's rule, an inline table: the line of `rule = { … }`
    (two(b="-1"), "levers.b.rule.min_speedup", 'rule = { metric = "items_per_s", min_speedup = -1, repeats = 6 }'),
    (HEAD.replace('lang = "en"', 'lang = "fr"') + LEVER.format(id="a", min_speedup=1.2), "plan.lang",
     'lang = "fr"'),
    # an element of an array written over several lines
    (HEAD + 'table = [\n  "a",\n  "ghost",\n]\n' + LEVER.format(id="a", min_speedup=1.2), "plan.table[1]",
     '  "ghost",'),
])
def test_the_line_of_the_key_at_fault(tmp_path, text, key, written):
    said = validate(tmp_path, text)
    assert said.startswith(f"{key}: ") and said.endswith(f" (line {line_of(text, written)})"), said


def test_a_duplicate_id_names_the_second_lever(tmp_path):
    text = two(b_id="a")
    said = validate(tmp_path, text)
    second = line_of(text, "[[levers]]", line_of(text, "[[levers]]"))
    assert said == f"levers.a: duplicate lever id (line {second})"


def test_a_missing_key_names_the_table_it_is_missing_from(tmp_path):
    text = two().replace('title = "b"\n', "")
    said = validate(tmp_path, text)
    second = line_of(text, "[[levers]]", line_of(text, "[[levers]]"))
    assert said == f"levers.b.title: missing (line {second})"


def test_a_syntax_error_quotes_the_line_tomllib_names(tmp_path):
    text = two().replace('title = "b"', 'title = "b')
    said = validate(tmp_path, text)
    line = line_of(text, 'title = "b')
    assert said.startswith("TOML syntax error: ") and f"(at line {line}, column " in said
    assert said.endswith(': title = "b') and "(line " not in said.replace(f"(at line {line}", ""), said


def test_every_key_of_the_default_plan_is_found_on_its_line():
    text = DEFAULT_PLAN.read_text(encoding="utf-8")
    lines = key_lines(text)
    written = text.splitlines()
    assert lines[("plan", "lang")] == line_of(text, 'lang = "ko"')
    levers = [n for n, line in enumerate(written, 1) if line.strip() == "[[levers]]"]
    assert [lines[("levers", i)] for i in range(len(levers))] == levers
    for (*_, last), n in lines.items():
        if isinstance(last, str):
            assert last in written[n - 1], (last, n, written[n - 1])
