"""The console's Textual side type-checks: mypy (pyproject.toml's [tool.mypy], as `make typecheck` runs it) reports
no error in console/tui/, where the main screen's concerns reach one another through typed APIs (screens/host.py)
instead of attributes a mixin borrowed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("typecheck")]

ROOT = Path(__file__).resolve().parents[2]
TYPING = ROOT / "build" / "typing" / "optseq"
ROOMS = ("console", "engine", "native", "state", "configs")


def test_mypy_finds_no_error_in_the_console_tui():
    # the links `make typecheck` makes: mypy sees the folders under the names the wheel gives them
    TYPING.mkdir(parents=True, exist_ok=True)
    (TYPING / "__init__.py").touch()
    for room in ROOMS:
        link = TYPING / room
        if not link.is_symlink():
            link.symlink_to(Path("../../..") / room)
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert "error: " in out.stdout or out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]  # mypy ran
    tui = [line for line in out.stdout.splitlines() if line.startswith("build/typing/optseq/console/tui/")
           and ": error:" in line]
    assert tui == [], "\n".join(tui)
