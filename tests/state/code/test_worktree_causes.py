"""What goes wrong with a commit's checkout is said in one line that names the real cause, through the CLI, with no
traceback: a working folder missing at BASE, a setup that deleted its checkout, a full disk during the checkout or
filled by the setup, a submodule git will not clone from a local path, a bare repository, `setup = [""]`."""
from __future__ import annotations

import os
import shutil

import pytest

from tests.code_repo import CodeRepo, make_repo
from tests.state.code.test_branch_levers import cli
from tests.state.store.test_store_full_disk import fill, small_disk  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(tmp_path / "cache"))
    return tmp_path / "cache"


def one_line(proc) -> str:
    """The failure's line: a run's or check's failed line, else stderr's one line (after compare's heading)."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    said = [l for l in proc.stdout.splitlines() if "FAILED" in l or ": failed" in l]
    said += [l for l in proc.stderr.splitlines() if l.strip() and not l.startswith("compare: ")]
    assert said, proc.stdout + proc.stderr
    return said[0]


@pytest.mark.slow
def test_a_working_folder_missing_at_base_is_named_not_a_missing_interpreter(tmp_path):
    repo = make_repo(tmp_path, workload_extra='cwd = "sub"\n', dirty=False)
    (repo.root / "sub").mkdir()
    shutil.copy(repo.root / "bench.py", repo.root / "sub" / "bench.py")
    repo.git("add", "sub")
    repo.git("commit", "--quiet", "-m", "the bench moves to sub/")
    base = repo.commit("main~1")
    line = one_line(cli(repo, tmp_path / "db", "compare", "main~1", "main", code=None))
    assert f"baseline main~1 ({base[:7]}) has no folder 'sub', where the plan's workload runs" in line, line


@pytest.mark.slow
def test_a_setup_that_deletes_its_checkout_is_said(tmp_path):
    repo = make_repo(tmp_path, workload_extra='''setup = ["sh", "-c", 'rm -rf "$OPTSEQ_TREE"']\n''', dirty=False)
    line = one_line(cli(repo, tmp_path / "db", "check", "fast", code=1))
    assert "is gone (its setup `sh -c rm -rf \"$OPTSEQ_TREE\"` deleted it" in line, line


def test_a_full_disk_during_the_checkout_is_said(tmp_path, small_disk, monkeypatch):  # noqa: F811
    repo = make_repo(tmp_path, dirty=False)
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(small_disk / "cache"))
    from optseq.state.code.worktrees import repo_folder

    repo_folder(repo.root).mkdir(parents=True)  # the cache's folder made, then room for two pages of a checkout
    filler = fill(small_disk)
    os.truncate(filler, filler.stat().st_size - 8192)
    # git itself says `unable to write file` and `Could not reset index file`, never that the disk is full
    line = one_line(cli(repo, tmp_path / "db", "check", "fast", code=None))
    assert "into optseq's worktrees" in line and "the disk is full (No space left on device, " in line, line
    assert "Could not reset index file" not in line
    assert "OPTSEQ_WORKTREES" in line


FILLER = '''"""Fills the disk its checkout is on (the data a setup downloads), then says what it unpacked."""
try:
    with open("big", "wb") as f:
        while True:
            f.write(bytes(65536))
except OSError:
    pass
for i in range(200):
    print("unpacked", "x" * 4000)
'''


def test_a_setup_that_fills_the_disk_is_said_in_one_line(tmp_path, small_disk, monkeypatch):  # noqa: F811
    repo = make_repo(tmp_path, workload_extra='setup = ["python", "fill.py"]\n', dirty=False)
    (repo.root / "fill.py").write_text(FILLER, encoding="utf-8")
    repo.git("add", "fill.py")
    repo.git("commit", "--quiet", "-m", "the data step")
    monkeypatch.setenv("OPTSEQ_WORKTREES", str(small_disk / "cache"))
    line = one_line(cli(repo, tmp_path / "db", "check", "fast", code=1))
    assert "setup of baseline HEAD" in line and "No space left on device (the setup may have filled the disk)" \
        in line, line



def test_a_local_submodule_says_the_transport_git_refuses_and_how_to_allow_it(tmp_path):
    lib = CodeRepo(tmp_path / "lib")
    lib.root.mkdir()
    lib.git("init", "--quiet", "-b", "main")
    (lib.root / "lib.py").write_text("x = 1\n", encoding="utf-8")
    lib.git("add", "lib.py")
    lib.git("commit", "--quiet", "-m", "lib")
    repo = make_repo(tmp_path, dirty=False)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "--quiet", str(lib.root), "lib")
    repo.git("commit", "--quiet", "-m", "a local submodule")
    empty = tmp_path / "gitconfig"  # whatever the machine's git allows, a user's that allows nothing special
    empty.write_text("", encoding="utf-8")
    line = one_line(cli(repo, tmp_path / "db", "check", "fast", code=None,
                        env={"GIT_CONFIG_GLOBAL": str(empty), "GIT_CONFIG_NOSYSTEM": "1"}))
    assert "transport 'file' not allowed" in line and "git config --global protocol.file.allow always" in line, line


def test_a_bare_repository_is_called_one(tmp_path):
    repo = make_repo(tmp_path, dirty=False)
    bare = tmp_path / "bare.git"
    repo.git("clone", "--quiet", "--bare", str(repo.root), str(bare))
    shutil.copy(repo.root / "optseq.toml", bare / "optseq.toml")
    line = one_line(cli(CodeRepo(bare), tmp_path / "db", "check", "fast", code=None))
    assert f"{bare} is in a bare git repository" in line, line


def test_an_empty_setup_program_is_refused_by_validate(tmp_path):
    repo = make_repo(tmp_path, workload_extra='setup = [""]\n', dirty=False)
    proc = cli(repo, tmp_path / "db", "validate", code=None)
    line = one_line(proc)
    assert "workload.setup" in line and "the program to run (its first word) is empty" in line, line
    assert len([l for l in proc.stderr.splitlines() if l.strip()]) == 1, proc.stderr
