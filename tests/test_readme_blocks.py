"""Every TOML block of README.md and docs/*.md loads with the real loader, through `optseq validate` (issue 32,
point 5: the README's own examples failed as pasted).

The convention, for whoever writes a block:
- ```toml            a whole plan: pasted into a file as it is, it must validate.
- ```toml fragment   a part of one: merged into the README's full example (its first ```toml block, the one under
                     "Use optseq on your repo"), and the result must validate.
- ```toml fragment of PATH
                     merged into that plan of this repository instead (PATH from the repository's root).
Merging: a table merges into the same table, key by key, the fragment's values winning; a `[[levers]]` (or any
array of tables) entry whose `id` names an entry of the base merges into it, one with a new id is added. A fragment
that means "on a lever" writes the id of the lever it goes on.
"""
from __future__ import annotations

import datetime
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conftest import OPTSEQ, ROOT

FENCE = re.compile(r"^```toml(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[tuple[str, str, str]]:
    """(where, info, body) of each ```toml block; where is FILE:LINE."""
    text = path.read_text(encoding="utf-8")
    return [(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m["info"].strip(), m["body"])
            for m in FENCE.finditer(text)]


ALL = [block for doc in DOCS for block in blocks(doc)]
README_FULL = blocks(ROOT / "README.md")[0]


def merge(base, fragment):
    if isinstance(base, dict) and isinstance(fragment, dict):
        out = dict(base)
        for key, value in fragment.items():
            out[key] = merge(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(fragment, list) and all(isinstance(x, dict) for x in base + fragment):
        out = list(base)
        for entry in fragment:
            at = next((i for i, old in enumerate(out) if "id" in entry and old.get("id") == entry["id"]), None)
            if at is None:
                out.append(entry)
            else:
                out[at] = merge(out[at], entry)
        return out
    return fragment


def toml_value(value) -> str:
    """A value as inline TOML (every table inline: the same data as the block's own layout)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(x) for x in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {value!r}")


def plan_text(info: str, body: str) -> str:
    """The plan a block stands for, as TOML."""
    if not info:
        return body
    kind, _, base = info.partition(" of ")
    assert kind.strip() == "fragment", f"unknown toml block kind {info!r} (a whole plan is a bare ```toml)"
    base_data = tomllib.loads((ROOT / base.strip()).read_text(encoding="utf-8") if base else README_FULL[2])
    data = merge(base_data, tomllib.loads(body))
    assert tomllib.loads("\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in data.items())) == data
    return "\n".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in data.items()) + "\n"


def test_the_readmes_first_toml_block_is_its_full_example():
    where, info, body = README_FULL
    assert info == "", f"{where}: the README's first ```toml block is the full example fragments merge into"
    assert "[plan]" in body and "[workload]" in body


@pytest.mark.parametrize("where,info,body", ALL, ids=[where for where, _, _ in ALL])
def test_the_block_validates(tmp_path, where, info, body):
    plan = tmp_path / "plan.toml"
    plan.write_text(plan_text(info, body), encoding="utf-8")
    proc = subprocess.run([*OPTSEQ, "--plan", str(plan), "--db", str(tmp_path / "db"), "validate"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{where} ({info or 'a whole plan'}): {proc.stderr.strip()}"
    assert "Traceback" not in proc.stderr


def test_the_users_path_comes_before_the_reference():
    """A newcomer meets install, the console, the seed story and their own repo before statistics and Ray."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    path = ["## Quick start", "## The console", "## The seed story: the default plan", "## Use optseq on your repo",
            "## Levers that are code: branches, and the commit gate", "## Gains held to account: the watch",
            "## Tests", "## Reference"]
    assert [h for h in headings if h in path] == path, headings
    lines = text.splitlines()
    yours = lines.index("## Use optseq on your repo")
    for reference in ("How optseq decides", "Ray cluster", "Hours saved", "Layout", "The plan"):
        at = [i for i, line in enumerate(lines) if line.startswith("#") and reference in line]
        assert all(i > yours for i in at), f"{reference!r} comes before Use optseq on your repo"
    assert text.count("\n") < 700, "the README grew past 700 lines: move reference into docs/"


def test_every_doc_the_readme_names_exists():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\bdocs/[a-z_]+\.md\b", text))
    assert {"docs/statistics.md", "docs/ray.md", "docs/serve.md", "docs/store.md"} <= named
    assert [doc for doc in sorted(named) if not (ROOT / doc).is_file()] == []
