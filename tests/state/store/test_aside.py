"""The store's aside copies (state/store/aside.py), which `doctor --rebuild` is made of: a kept copy never
overwrites another and is the disk's bytes read back; a replace leaves the old bytes or the new ones wherever a
SIGKILL falls (OPTSEQ_TEST_KILL_AT, in a child process)."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import pytest

from optseq.state.store import aside
from optseq.state.store.storage import StoreUnwritable

KILLED = [
    ("fix-half", b"old bytes"), ("fix-written", b"old bytes"), ("fix-renamed", b"new bytes"),
]


def test_a_copy_is_kept_beside_the_file_with_its_mode_and_never_overwritten(tmp_path):
    path = tmp_path / "optseq.json"
    path.write_bytes(b"first")
    path.chmod(0o640)
    kept, new = aside.keep_copy(path, b"first", "replaced-1")
    assert (kept.name, new, kept.read_bytes()) == ("optseq.json.replaced-1", True, b"first")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    again, new = aside.keep_copy(path, b"first", "replaced-1")  # a rebuild killed after keeping it
    assert (again, new) == (kept, False)
    other, new = aside.keep_copy(path, b"second", "replaced-1")
    assert (other.name, new, other.read_bytes()) == ("optseq.json.replaced-1-2", True, b"second")
    assert kept.read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["optseq.json", "optseq.json.replaced-1", "optseq.json.replaced-1-2"]


def test_replace_gives_the_new_bytes_and_keeps_the_mode(tmp_path):
    path = tmp_path / "optseq.json"
    path.write_bytes(b"old")
    path.chmod(0o600)
    aside.replace(path, b"new", "fix")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["optseq.json"]


def test_a_replace_that_cannot_write_says_so_in_one_line(tmp_path):
    folder = tmp_path / "optseq.json"
    folder.mkdir()
    with pytest.raises(StoreUnwritable) as caught:
        aside.replace(folder, b"new", "fix")
    assert str(caught.value).startswith(f"cannot write {folder}: ") and "\n" not in str(caught.value)
    with pytest.raises(StoreUnwritable, match=r"^cannot write .*/gone/\.optseq\.json\.[0-9a-f]{12}\.tmp: "):
        aside.replace(tmp_path / "gone" / "optseq.json", b"new", "fix")


@pytest.mark.parametrize("at,left", KILLED)
def test_a_replace_killed_at_each_step_leaves_the_old_bytes_or_the_new(tmp_path, at, left):
    path = tmp_path / "optseq.json"
    path.write_bytes(b"old bytes")
    code = "import sys; from pathlib import Path; from optseq.state.store import aside; " \
           "aside.replace(Path(sys.argv[1]), b'new bytes', 'fix')"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], env={**os.environ, aside.KILL_ENV: at})
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == left
    temps = [name for name in os.listdir(tmp_path) if name != "optseq.json"]
    # killed before the rename, the temp file is left for the store's next writer to clear; after it, none is
    assert len(temps) == (0 if at == "fix-renamed" else 1)


def test_a_keep_killed_before_its_link_keeps_nothing_and_after_it_the_copy(tmp_path):
    path = tmp_path / "optseq.json"
    path.write_bytes(b"old bytes")
    code = "import sys; from pathlib import Path; from optseq.state.store import aside; " \
           "aside.keep_copy(Path(sys.argv[1]), b'old bytes', 'replaced-1')"
    for at, copies in (("keep-verified", []), ("keep-linked", ["optseq.json.replaced-1"])):
        proc = subprocess.run([sys.executable, "-c", code, str(path)], env={**os.environ, aside.KILL_ENV: at})
        assert proc.returncode == -signal.SIGKILL
        assert sorted(p.name for p in tmp_path.glob("optseq.json.replaced-*")) == copies
