"""The type checker passes on state/ and console/ (pyproject.toml's [tool.mypy], as `make typecheck` runs it)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# a cold mypy run over the whole package: slow (make test-fast leaves it to make test and make typecheck)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("typecheck")]

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("console", "engine", "native", "state", "configs")


def _typing_tree(top: Path) -> None:
    """build/typing/optseq as the Makefile makes it: links naming the repo's folders as the wheel does."""
    tree = top / "build" / "typing" / "optseq"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    for room in ROOMS:
        (tree / room).symlink_to(ROOT / room, target_is_directory=True)
    shutil.copy(ROOT / "pyproject.toml", top / "pyproject.toml")


def test_mypy_finds_no_error_in_state_and_console(tmp_path):
    pytest.importorskip("mypy", reason="mypy is a dev dependency (make test installs it)")
    _typing_tree(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout, proc.stdout[-2000:]


def test_the_check_sees_an_error(tmp_path):
    """The check itself: a wrong type in a module under the configured packages is reported."""
    pytest.importorskip("mypy", reason="mypy is a dev dependency (make test installs it)")
    pkg = tmp_path / "build" / "typing" / "optseq" / "state"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "wrong.py").write_text("def f() -> int:\n    return 'one'\n")
    (pkg.parent / "console").mkdir()
    (pkg.parent / "console" / "__init__.py").write_text("")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout
    assert "wrong.py:2: error: Incompatible return value type" in proc.stdout, proc.stdout
