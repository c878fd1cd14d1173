"""One cache folder for everything optseq caches: the worktrees of branch levers and the console's parsed
stylesheet both live under state/cache_root.py's folder, which follows XDG_CACHE_HOME, and without a home there
is none (the stylesheet is parsed each time, a worktree is refused in one line) instead of a folder named `~`."""
from __future__ import annotations

import json
import subprocess
import sys

CODE = """
import json
from optseq.state.cache_root import cache_root
from optseq.state.code import worktrees
from optseq.state.errors import InputError
from optseq.console.tui.css_cache import cache_file
try:
    trees = str(worktrees.cache_root())
except InputError as exc:
    trees = "refused: " + str(exc)
root = cache_root()
print(json.dumps({"root": root and str(root), "trees": trees, "css": str(cache_file({"a": "b"})),
                  "listing": worktrees.listing()}))
"""


def _ask(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CODE], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def test_every_cache_is_under_the_one_root(tmp_path):
    found = _ask({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")})
    root = str(tmp_path / "xdg" / "optseq")
    assert found["root"] == root
    assert found["trees"] == root + "/worktrees"
    assert found["css"].startswith(root + "/tcss-")

    found = _ask({"HOME": str(tmp_path / "home")})
    assert found["root"] == str(tmp_path / "home" / ".cache" / "optseq")


def test_without_a_home_there_is_no_cache_folder_and_no_folder_named_tilde(tmp_path):
    found = _ask({"HOME": "~"})  # what a service account without a home sees expanduser give back
    assert found["root"] is None and found["css"] == "None" and found["listing"] == []
    assert found["trees"].startswith("refused: no folder for optseq's worktrees: set OPTSEQ_WORKTREES")
