"""state/api.py, the console's one door into state/: each name it lists is the object its room defines, the type
checker is shown the same names, and importing it imports no room (status and the first screen stay light)."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from optseq.state import api

ROOT = Path(__file__).resolve().parents[2]


def _typed_names() -> set[str]:
    tree = ast.parse((ROOT / "state" / "api.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") ==
                 "TYPE_CHECKING")
    return {alias.asname or alias.name for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_each_name_is_its_rooms_object_and_typed_as_it():
    assert _typed_names() == set(api.WHERE)
    for name, (module, attr) in api.WHERE.items():
        found = importlib.import_module(module)
        assert getattr(api, name) is (found if attr is None else getattr(found, attr)), name


def test_an_unknown_name_is_an_attribute_error():
    try:
        api.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("api.no_such_name was found")


def test_importing_the_api_imports_no_room_of_state():
    code = ("import sys\nimport optseq.state.api\n"
            "print(sorted(m for m in sys.modules if m.startswith('optseq.state.') and m != 'optseq.state.api'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
