"""The import structure holds: the contracts in pyproject.toml (import-linter) and no import circle anywhere."""
import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# on one parallel worker (make test runs pytest -n): the copied tree is built once
pytestmark = pytest.mark.xdist_group("layers")

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("console", "engine", "native", "state")

# Strongly connected components of optseq's import graph (grimp, which import-linter is built on), lazy
# imports inside functions included: a circle through one is still a circle the reader must hold in mind.
CIRCLES = """
import json, sys
import grimp

graph = grimp.build_graph("optseq")
index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on_stack.add(v)
    for w in sorted(graph.find_modules_directly_imported_by(v)):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop(); on_stack.discard(w); group.append(w)
            if w == v:
                break
        if len(group) > 1:
            found.append(sorted(group))

sys.setrecursionlimit(10000)
for module in sorted(graph.modules):
    if module not in index:
        visit(module)
print(json.dumps({"modules": len(graph.modules), "circles": found}))
"""


@pytest.fixture(scope="module")
def wheel_tree(tmp_path_factory):
    """The sources laid out as the wheel has them (optseq/console, ...): import-linter and grimp walk packages on
    sys.path, and the editable install maps optseq.X onto the repo's top-level folders instead."""
    return _layout(tmp_path_factory.mktemp("layout"))


def _layout(top: Path) -> Path:
    tree = top / "src" / "optseq"
    for layer in LAYERS:
        shutil.copytree(ROOT / layer, tree / layer, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    (tree / "__init__.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", top / "pyproject.toml")
    return top


def _env(top: Path) -> dict:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(top / "src")}


def test_import_contracts_are_kept(wheel_tree):
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a dev dependency; run make test"
    proc = subprocess.run([exe], cwd=wheel_tree, env=_env(wheel_tree), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "Contracts: 7 kept" in proc.stdout, proc.stdout[-2000:]
    for rooms in ("state's rooms import downward only", "console's rooms import downward only",
                  "the commands never import textual or the Textual console",
                  "the console imports state only through optseq.state.api"):
        assert f"{rooms} KEPT" in proc.stdout, proc.stdout[-2000:]


def test_the_console_past_the_api_breaks_its_contract(tmp_path):
    """The contract itself: a command that imports a room of state/ instead of optseq.state.api is caught, lazily
    too, while the same name through the API is kept."""
    top = _layout(tmp_path)
    fit = top / "src" / "optseq" / "console" / "commands" / "fit.py"
    fit.write_text(fit.read_text() + "\n\ndef _late():\n    from optseq.state.text import ratio_text\n")
    proc = subprocess.run([shutil.which("lint-imports", path=str(Path(sys.executable).parent)), "--contract",
                           "optseq-console-api"], cwd=top, env=_env(top), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "the console imports state only through optseq.state.api BROKEN" in proc.stdout, proc.stdout[-2000:]
    assert "optseq.console.commands.fit -> optseq.state.text" in proc.stdout, proc.stdout[-2000:]


def test_no_import_circle_anywhere(wheel_tree):
    proc = subprocess.run([sys.executable, "-c", CIRCLES], cwd=wheel_tree, env=_env(wheel_tree),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert found["modules"] > 100, found  # the whole package was walked, not an empty tree
    assert found["circles"] == [], "modules that import each other: " + "; ".join(
        " <-> ".join(group) for group in found["circles"])


def test_the_circle_check_sees_a_lazy_circle(tmp_path):
    """The check itself: two modules that import each other only inside functions are found."""
    pkg = tmp_path / "src" / "optseq"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from optseq import b\n")
    (pkg / "b.py").write_text("from optseq import a\n")
    (pkg / "c.py").write_text("from optseq import a\n")
    proc = subprocess.run([sys.executable, "-c", CIRCLES], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["circles"] == [["optseq.a", "optseq.b"]]


CONSOLE_TOP = {"__init__.py", "cli.py", "collector.py"}
"""What console/ holds outside its rooms: the `optseq` entry and the collector switch every command runs under."""
CONSOLE_ROOMS = {"commands", "tui", "words", "bench"}


def _imports_textual(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    return any(name == "textual" or name.startswith("textual.") for name in names)


def test_the_console_is_in_rooms():
    """console/ is the entry and its rooms (docs/architecture.md): every command in commands/, every module that
    imports textual in tui/ (or a bench measuring it), and every room a package, which a wheel ships (setup.py finds
    packages by their __init__.py: a folder without one would be missing from a fresh install)."""
    console = ROOT / "console"
    assert {p.name for p in console.glob("*.py")} == CONSOLE_TOP
    rooms = {p.name for p in console.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms == CONSOLE_ROOMS, rooms
    folders = [p for p in console.rglob("*") if p.is_dir() and p.name != "__pycache__"]
    assert [str(p.relative_to(ROOT)) for p in folders if not (p / "__init__.py").is_file()] == []
    commands = sorted(str(p.relative_to(ROOT)) for p in console.rglob("*_cmd.py"))
    assert commands and all(p.startswith("console/commands/") for p in commands), commands
    textual = sorted(str(p.relative_to(ROOT)) for p in console.rglob("*.py") if _imports_textual(p))
    assert textual and all(p.startswith(("console/tui/", "console/bench/")) for p in textual), textual


MAX_LINES = 400
"""A module longer than this holds more than one idea: split it by idea (docs/architecture.md)."""


def test_no_module_over_400_lines():
    long = sorted(f"{path.relative_to(ROOT)} ({n} lines)" for layer in LAYERS for path in (ROOT / layer).rglob("*.py")
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert not long, "split by idea: " + ", ".join(long)
