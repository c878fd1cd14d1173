"""The layer contracts in pyproject.toml hold (import-linter over the real source)."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("console", "engine", "native", "state")


def test_import_contracts_are_kept(tmp_path):
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a dev dependency; run make test"
    # import-linter walks packages on sys.path, and the editable install maps optseq.X onto the repo's
    # top-level folders instead: lay the same sources out as the wheel does (optseq/console, ...)
    tree = tmp_path / "src" / "optseq"
    for layer in LAYERS:
        shutil.copytree(ROOT / layer, tree / layer, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    proc = subprocess.run([exe], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree.parent)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "Contracts: 3 kept" in proc.stdout, proc.stdout[-2000:]
