"""`optseq export -o` and the console's export: the target checked before anything is written; writes atomic."""
from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DEFAULT_PLAN, OPTSEQ


def optseq(cli_env, *args, cwd=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*OPTSEQ, *args], env=cli_env, cwd=cwd, capture_output=True, text=True, timeout=60, **kw)


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path under root with its bytes (its kind, for a directory, link or pipe)."""
    def content(p: Path) -> bytes | str:
        if p.is_symlink():
            return f"link to {os.readlink(p)}"
        return p.read_bytes() if p.is_file() else "directory" if p.is_dir() else "special"

    return {str(p.relative_to(root)): content(p) for p in sorted(root.rglob("*"))}


def strays(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.fixture
def store(cli_env, db) -> Path:
    """A store with something in it, so that losing or rewriting it would show."""
    assert optseq(cli_env, "fact", "eval_dense", "true").returncode == 0
    assert (db / "optseq.json").exists()
    return db


def refused(cli_env, tmp_path: Path, db: Path, target: str, fragment: str, cwd=None) -> str:
    before, store_before = snapshot(tmp_path), snapshot(db)
    proc = optseq(cli_env, "export", "-o", target, cwd=cwd)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("optseq: cannot export to "), proc.stderr
    assert fragment in proc.stderr, proc.stderr
    assert snapshot(db) == store_before  # the store is untouched, byte for byte
    assert snapshot(tmp_path) == before and not strays(tmp_path)
    after = optseq(cli_env, "status", "--json")
    assert after.returncode == 0 and '"eval_dense": true' in after.stdout, after.stderr
    return proc.stderr


def test_an_existing_directory_is_refused(cli_env, tmp_path, store):
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.md").write_text("kept", encoding="utf-8")
    refused(cli_env, tmp_path, store, str(out), "is a directory")
    refused(cli_env, tmp_path, store, f"{out}/", "names a directory")


def test_a_path_under_a_regular_file_is_refused(cli_env, tmp_path, store):
    somefile = tmp_path / "somefile"
    somefile.write_text("kept", encoding="utf-8")
    refused(cli_env, tmp_path, store, str(somefile / "x.md"), f"{somefile} is not a directory")
    refused(cli_env, tmp_path, store, str(somefile / "deeper" / "x.md"), f"{somefile} is not a directory")


def test_a_path_under_proc_is_refused(cli_env, tmp_path, store):
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    refused(cli_env, tmp_path, store, "/proc/x.md", "cannot write in /proc (")
    assert not Path("/proc/x.md").exists()
    assert not [p for p in Path("/proc").iterdir() if p.name.endswith(".tmp")]


def test_a_missing_directory_is_refused_not_created(cli_env, tmp_path, store):
    missing = tmp_path / "missing" / "deeper"
    err = refused(cli_env, tmp_path, store, str(missing / "x.md"), f"directory {missing} does not exist")
    assert "create it first" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("target, fragment", [("", "no file name given"), ("   ", "no file name given"),
                                              (".", "names a directory"), ("..", "names a directory")])
def test_empty_and_dot_are_refused(cli_env, tmp_path, store, target, fragment):
    work = tmp_path / "cwd"
    work.mkdir()
    refused(cli_env, tmp_path, store, target, fragment, cwd=work)


@pytest.mark.parametrize("name", ["optseq.json", "lock", "holder.json", ".optseq.json.abc.tmp", "runs/x.md",
                                  "runs", "."])
def test_the_stores_own_files_are_refused(cli_env, tmp_path, store, name):
    refused(cli_env, tmp_path, store, str(store / name), "is one of the store's own files")


def test_a_link_to_the_store_is_refused(cli_env, tmp_path, store):
    link = tmp_path / "plan.md"
    link.symlink_to(store / "optseq.json")
    refused(cli_env, tmp_path, store, str(link), "is one of the store's own files")
    assert link.is_symlink()


def test_something_not_a_regular_file_is_refused(cli_env, tmp_path, store):
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    refused(cli_env, tmp_path, store, str(fifo), "is not a regular file")


def test_an_existing_directory_writes_and_replaces_atomically(cli_env, tmp_path, store):
    docs = tmp_path / "docs"
    docs.mkdir()
    out = docs / "seq.md"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o640)
    proc = optseq(cli_env, "export", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == f"wrote {out}\n", proc.stderr
    assert out.read_text(encoding="utf-8") == optseq(cli_env, "export").stdout
    assert out.stat().st_mode & 0o777 == 0o640  # replaced, but keeps the mode it had
    assert sorted(p.name for p in docs.iterdir()) == ["seq.md"]


def test_the_store_dir_itself_may_hold_an_export(cli_env, tmp_path, store):
    # the console's default export directory is the state directory: only the store's files are off limits
    proc = optseq(cli_env, "export", "-o", str(store / "plan.md"))
    assert proc.returncode == 0, proc.stderr
    assert (store / "plan.md").read_text(encoding="utf-8").startswith("# Optimization Sequencing")


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temp(cli_env, tmp_path, store):
    docs = tmp_path / "docs"
    docs.mkdir()
    out = docs / "seq.md"
    out.write_text("old", encoding="utf-8")

    def small_files():  # writes past 1 KiB fail with EFBIG instead of killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    store_before = snapshot(store)
    proc = optseq(cli_env, "export", "-o", str(out), preexec_fn=small_files)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"optseq: cannot export to {out}: cannot write (") and proc.stderr.count("\n") == 1
    assert out.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in docs.iterdir()) == ["seq.md"]
    assert snapshot(store) == store_before


# -- the console's export dialog goes through the same function -------------------------------------------------
def test_the_console_export_refuses_a_missing_directory_and_writes_into_an_existing_one(db, tmp_path):
    from console.app import make_app

    missing = tmp_path / "missing" / "x.md"
    good = tmp_path / "x.md"

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(80, 24)) as pilot:
            app.main._export({"path": str(missing), "lang": "en"})
            await pilot.pause()
            messages = [n.message for n in app._notifications]
            assert f"export failed: cannot export to {missing}: directory {missing.parent} does not exist " \
                   "(create it first)" in messages
            assert app.screen is app.main
            app.main._export({"path": str(good), "lang": "en"})
            await pilot.pause()
            assert type(app.screen).__name__ == "ExportPreview"

    asyncio.run(go())
    assert not missing.parent.exists() and not strays(tmp_path)
    assert good.read_text(encoding="utf-8").startswith("# Optimization Sequencing")
