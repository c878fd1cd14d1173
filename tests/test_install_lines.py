"""Every `pip install` the docs and the code's messages tell a user to type installs this project or what it needs
(issue 38, point 7: `optseq` on PyPI is another project, so `pip install "optseq[engine]"` installed that).

What names this project: a path to a clone (`.`, `/path/to/optseq`, with or without extras) or the distribution's
own name with a URL (`optseq-plan[engine] @ git+…`): it is on no index, so a bare `optseq-plan` would claim one.
Anything else named must be one of the project's own dependencies (torch for the engine extra, ray for ray).
"""
from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
DEPENDENCIES = {canonicalize_name(Requirement(r).name) for extra in PYPROJECT["project"]["optional-dependencies"]
                .values() for r in extra} | {canonicalize_name(Requirement(r).name)
                                             for r in PYPROJECT["project"]["dependencies"]}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = sorted(p for folder in ("console", "state", "engine", "native", "configs")
              for p in (ROOT / folder).rglob("*.py"))


def doc_commands(path: Path) -> list[tuple[str, str]]:
    """(FILE:LINE, the words after `pip install`) of each install in a doc: in code spans (which may wrap over a
    line) and in fenced blocks, a shell comment left off."""
    text = path.read_text(encoding="utf-8")
    fenced = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
    prose = fenced.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # the blocks blanked, lines kept
    spans = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in re.finditer(r"`([^`\n]+(?:\n[^`\n]+)?)`",
                                                                                    prose)]
    for block in fenced.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        spans += [(first + i, re.sub(r"(^|\s)#.*", "", line)) for i, line in enumerate(block.group(1).splitlines())]
    # the command ends where the sentence around it goes on: `(pip install torch: the engine extra)`
    return [(f"{path.relative_to(ROOT)}:{line}", re.split(r"[;)]|[:,] ", m.group(1))[0].strip())
            for line, span in spans for m in re.finditer(r"\bpip install (.*)", " ".join(span.split()))]


def code_commands(path: Path) -> list[tuple[str, str]]:
    """`pip install X` in a message of the code (X quoted or a bare word)."""
    text = path.read_text(encoding="utf-8")
    return [(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1))
            for m in re.finditer(r"pip install ('[^'\n]+'|\"[^\"\n]+\"|[^\s'\"),:;]+)", text)]


COMMANDS = [c for doc in DOCS for c in doc_commands(doc)] + [c for path in CODE for c in code_commands(path)]


def problem(arg: str) -> str | None:
    """What is wrong with one requirement a user would type; None when it installs this project or its need."""
    if arg.startswith(("/", ".", "~")):
        folder = arg.split("[", 1)[0].rstrip("/")
        return None if folder in (".", "/path/to/optseq") else f"{arg}: a path, but not to a clone of optseq"
    try:
        req = Requirement(arg)
    except InvalidRequirement as exc:
        return f"{arg}: pip would refuse it ({exc})"
    name = canonicalize_name(req.name)
    if name == canonicalize_name(NAME):
        return None if req.url else f"{arg}: {NAME} is on no index: give a path or `{NAME} @ git+URL`"
    if name in DEPENDENCIES:
        return None
    return f"{arg}: installs {req.name}, which is neither this project ({NAME}) nor one of its dependencies"


def test_the_distribution_is_not_the_other_projects_name():
    assert canonicalize_name(NAME) != "optseq"  # PyPI's optseq is a scheduling solver
    assert PYPROJECT["project"]["scripts"] == {"optseq": "optseq.console.cli:main"}


def test_the_docs_and_the_code_tell_users_to_install_something():
    assert len([c for c in COMMANDS if c[0].startswith("README.md")]) >= 5, COMMANDS


@pytest.mark.parametrize("where,command", COMMANDS, ids=[f"{w} {c}" for w, c in COMMANDS])
def test_every_install_line_installs_this_project_or_its_need(where, command):
    args = [a for a in shlex.split(command) if not a.startswith("-")]
    assert args, f"{where}: `pip install {command}` names nothing"
    problems = [p for p in map(problem, args) if p]
    assert not problems, f"{where}: `pip install {command}`: {'; '.join(problems)}"
