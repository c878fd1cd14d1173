"""The one atomic write (state/atomic.py): a file replaced whole or left as it was, never a temp file behind; and
the places that wrote aside by hand, or took a flock by hand, are gone."""
from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

import pytest

from optseq.state import atomic
from tests.conftest import ROOT
from tests.state.store.test_store_full_disk import fill, small_disk  # noqa: F401 - a fixture, used by name


def test_a_file_is_replaced_whole_keeps_its_mode_and_no_temp_file_stays(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b"old " * 1000)
    path.chmod(0o640)
    st = atomic.replace(path, b"new content")
    assert path.read_bytes() == b"new content"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert st.st_ino == path.stat().st_ino  # the stat returned is the file renamed into place
    assert os.listdir(tmp_path) == ["doc.json"]


def test_a_new_file_gets_the_mode_asked_and_a_written_function_its_bytes(tmp_path):
    path = tmp_path / "new.bin"
    atomic.replace(path, lambda f: f.write(b"packed"), mode=0o604)
    assert path.read_bytes() == b"packed"
    assert stat.S_IMODE(path.stat().st_mode) == 0o604
    atomic.replace(path, b"again", mode=0o600, keep_mode=False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_write_stopped_half_way_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b"old")
    seen = []

    def stop(at: str) -> None:
        seen.append(at)
        if at == "half":  # half the new bytes are on disk in the temp file
            assert len(list(tmp_path.glob(".doc.json.*.tmp"))) == 1
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.replace(path, b"0123456789", step=stop)
    assert seen == ["half"]
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["doc.json"]


def test_the_steps_come_in_order_around_the_rename(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b"old")
    held = {}
    atomic.replace(path, b"new", step=lambda at: held.setdefault(at, path.read_bytes()))
    assert held == {"half": b"old", "written": b"old", "renamed": b"new"}


def test_a_full_disk_half_way_leaves_the_old_file_whole_and_no_temp_file(small_disk):  # noqa: F811
    path = small_disk / "doc.json"
    path.write_bytes(b"old content")
    filler = fill(small_disk)
    with open(filler, "r+b") as f:  # room for part of the new bytes: the write fails half-way through them
        f.truncate(f.seek(0, os.SEEK_END) - 16384)
    with pytest.raises(atomic.AtomicWriteError) as caught:
        atomic.replace(path, b"x" * 262144)
    assert caught.value.errno == errno.ENOSPC and caught.value.stage == "write"
    assert caught.value.where.name.startswith(".doc.json.")  # the temp file it met the full disk in
    assert "No space left on device" in str(caught.value)
    assert path.read_bytes() == b"old content"
    assert sorted(os.listdir(small_disk)) == ["doc.json", "filler"]


def test_a_rename_refused_leaves_what_was_there_and_no_temp_file(tmp_path):
    folder = tmp_path / "doc.json"
    folder.mkdir()
    (folder / "inside").write_text("kept")
    with pytest.raises(atomic.AtomicWriteError) as caught:
        atomic.replace(folder, b"new", keep_mode=False)
    assert caught.value.stage == "rename" and caught.value.where == folder
    assert (folder / "inside").read_text() == "kept"
    assert os.listdir(tmp_path) == ["doc.json"]


def test_a_missing_folder_is_said_as_the_temp_file_that_could_not_be_made(tmp_path):
    with pytest.raises(atomic.AtomicWriteError) as caught:
        atomic.replace(tmp_path / "gone" / "doc.json", b"new")
    assert caught.value.stage == "temp" and caught.value.errno == errno.ENOENT
    assert os.listdir(tmp_path) == []


# ---- one owner: nothing writes aside or takes a flock by hand ---------------------------------------------------

# what stays by hand, and why: a journal's append and cut are no replace; init renames its files only once every
# one is written aside (atomic.write_temp); engine/ may not import state/ (pyproject's contracts)
BY_HAND_OK = {"state/atomic.py", "state/flock.py", "state/store/journal.py", "console/commands/init_cmd.py"}


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for room in ("state", "console") for p in (ROOT / room).rglob("*.py")}


def test_every_file_replaced_whole_is_replaced_by_the_one_atomic_write():
    by_hand = {name for name, text in _sources().items()
               if re.search(r"os\.(replace|fsync)\(|tempfile\.mkstemp\(", text) and name not in BY_HAND_OK}
    assert by_hand == set()


def test_every_flock_is_the_one_lock_and_filelock_is_no_dependency():
    by_hand = {name for name, text in _sources().items() if re.search(r"^import fcntl|fcntl\.flock", text, re.M)
               and name != "state/flock.py"}
    assert by_hand == set()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "filelock" not in pyproject.split("[project.optional-dependencies]")[0]
