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
    assert optseq(cli_env, "export", "--lang", "en", "-o", str(out)).returncode == 0  # an earlier export
    out.chmod(0o640)
    assert optseq(cli_env, "fact", "eval_dense", "false").returncode == 0
    proc = optseq(cli_env, "export", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == f"wrote {out}\n", proc.stderr
    assert out.read_text(encoding="utf-8") == optseq(cli_env, "export").stdout
    assert out.stat().st_mode & 0o777 == 0o640  # replaced, but keeps the mode it had
    assert sorted(p.name for p in docs.iterdir()) == ["seq.md"]


@pytest.mark.parametrize("name", ["plan.md", "runs/1/plan.md", "sub/plan.md"])
def test_the_store_dir_holds_no_export_forced_or_not(cli_env, tmp_path, store, name):
    (store / "runs" / "1").mkdir(parents=True, exist_ok=True)
    (store / "sub").mkdir()
    fragment = "is one of the store's own files" if name.startswith("runs/") else "is in the state directory"
    refused(cli_env, tmp_path, store, str(store / name), fragment)
    before = snapshot(tmp_path)
    proc = optseq(cli_env, "export", "--force", "-o", str(store / name))
    assert proc.returncode == 2 and fragment in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert snapshot(tmp_path) == before


def test_a_link_into_the_store_dir_is_refused(cli_env, tmp_path, store):
    link = tmp_path / "here"
    link.symlink_to(store, target_is_directory=True)
    refused(cli_env, tmp_path, store, str(link / "plan.md"), f"is in the state directory {store}")


# -- a file that optseq did not write is not replaced unless forced ----------------------------------------------
def test_a_file_optseq_did_not_write_is_kept_unless_forced(cli_env, tmp_path, store):
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes\n\nhand-written, not an export\n", encoding="utf-8")
    err = refused(cli_env, tmp_path, store, str(notes), "the file exists and is not an optseq export")
    assert "<!-- optseq export -->" in err and "--force" in err
    proc = optseq(cli_env, "export", "-o", str(notes), "--force")
    assert proc.returncode == 0 and proc.stdout == f"wrote {notes}\n", proc.stderr
    assert notes.read_text(encoding="utf-8") == optseq(cli_env, "export").stdout
    # now it is an export: the next one replaces it unforced
    assert optseq(cli_env, "export", "--lang", "en", "-o", str(notes)).returncode == 0
    assert notes.read_text(encoding="utf-8").endswith("\n<!-- optseq export -->\n")


def test_the_marker_must_be_the_last_line(cli_env, tmp_path, store):
    # a doc that quotes an export (or an export edited by hand below its marker) is the user's now
    quoted = tmp_path / "quoted.md"
    quoted.write_text(optseq(cli_env, "export").stdout + "\nmy own notes below the export\n", encoding="utf-8")
    refused(cli_env, tmp_path, store, str(quoted), "is not an optseq export")
    trailing = tmp_path / "trailing.md"
    trailing.write_text(optseq(cli_env, "export").stdout + "\n\n  \n", encoding="utf-8")  # blank lines only
    assert optseq(cli_env, "export", "-o", str(trailing)).returncode == 0


def test_an_empty_file_holds_nothing_to_lose_and_is_replaced(cli_env, tmp_path, store):
    empty = tmp_path / "made-by-mktemp.md"
    empty.touch()
    assert optseq(cli_env, "export", "-o", str(empty)).returncode == 0
    assert empty.read_text(encoding="utf-8").startswith("# Optimization Sequencing")


def test_an_unreadable_file_is_refused_unless_forced(cli_env, tmp_path, store):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    locked = tmp_path / "locked.md"
    locked.write_text("secret", encoding="utf-8")
    locked.chmod(0o200)
    refused(cli_env, tmp_path, store, str(locked), "cannot read it to check it is an optseq export")


def test_force_without_a_file_is_bad_input(cli_env, store):
    proc = optseq(cli_env, "export", "--force")
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr == "optseq: export --force only applies with -o [FILE]\n"


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temp(cli_env, tmp_path, store):
    docs = tmp_path / "docs"
    docs.mkdir()
    out = docs / "seq.md"
    out.write_text("old", encoding="utf-8")

    def small_files():  # writes past 1 KiB fail with EFBIG instead of killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    store_before = snapshot(store)
    # forced: the user's file gets past the did-optseq-write-it check, to the write that fails
    proc = optseq(cli_env, "export", "--force", "-o", str(out), preexec_fn=small_files)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"optseq: cannot export to {out}: cannot write (") and proc.stderr.count("\n") == 1
    assert out.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in docs.iterdir()) == ["seq.md"]
    assert snapshot(store) == store_before


# -- the console's export dialog goes through the same function -------------------------------------------------
async def submit_export(app, pilot, path: Path, lang: str = "en"):
    """Open the export dialog with `e`, give it `path` and `lang`, and press Enter; returns the dialog."""
    from optseq.console.tui.dialogs.export_path import ExportDialog

    await pilot.press("e")
    dialog = app.screen
    assert isinstance(dialog, ExportDialog)
    dialog.query_one("#path").value = str(path)
    dialog.query_one("#lang").value = lang
    await pilot.press("enter")
    return dialog


def settled(dialog) -> bool:
    """The dialog's export worker is done (or none was started): not busy, no loading indicator."""
    return not dialog.busy and not dialog.query_one(".form-buttons").loading


def test_the_console_export_refuses_a_missing_directory_and_writes_into_an_existing_one(db, tmp_path):
    from optseq.console.tui.app import make_app
    from tests.console.test_app import until

    missing = tmp_path / "missing" / "x.md"
    good = tmp_path / "x.md"

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(80, 24)) as pilot:
            dialog = await submit_export(app, pilot, missing)
            refusal = f"cannot export to {missing}: directory {missing.parent} does not exist (create it first)"
            await until(pilot, lambda: dialog.error != "" and settled(dialog), what="the refusal on the error line")
            assert dialog.error == refusal
            assert app.screen is dialog  # the dialog stays open, the path still there to fix
            assert dialog.query_one("#path").value == str(missing)
            assert not app._notifications  # inline, not a notification
            # the focus is back on the path once the write's cover is gone: an Enter there writes, not Cancel
            await until(pilot, lambda: dialog.focused is dialog.query_one("#path"), what="the focus on the path")
            dialog.query_one("#path").value = str(good)
            await pilot.pause()
            assert dialog.error == ""  # fixing the path clears the refusal
            await pilot.press("enter")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")

    asyncio.run(go())
    assert not missing.parent.exists() and not strays(tmp_path)
    assert good.read_text(encoding="utf-8").startswith("# Optimization Sequencing")


def test_the_console_exports_into_docs_beside_the_store_by_default_never_the_working_directory(tmp_path, monkeypatch):
    from optseq.console.tui.app import make_app
    from tests.console.test_app import until

    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)  # a repo's root, its store in .optseq/ as optseq makes it by default

    async def go():
        app = make_app(DEFAULT_PLAN, repo / ".optseq")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("e")
            assert app.screen.query_one("#path").value == str(repo / "docs" / "optimization-sequencing.md")
            await pilot.press("enter")  # docs/ is missing: the default's folder is made
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the export preview")

    asyncio.run(go())
    written = (repo / "docs" / "optimization-sequencing.md").read_text(encoding="utf-8")
    assert written.startswith("# Optimization Sequencing")
    assert sorted(p.name for p in repo.iterdir()) == [".optseq", "docs"]  # nothing in the repo root
    assert sorted(p.name for p in (repo / "docs").iterdir()) == ["optimization-sequencing.md"]


# -- the default target: docs/ beside the state directory -------------------------------------------------------
def test_o_alone_writes_docs_beside_the_store_making_docs(cli_env, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**cli_env, "OPTSEQ_DB": ".optseq"}  # the default store, in the working directory
    assert optseq(env, "fact", "eval_dense", "true", cwd=repo).returncode == 0
    proc = optseq(env, "export", "-o", cwd=repo)
    out = repo / "docs" / "optimization-sequencing.md"
    assert proc.returncode == 0 and proc.stdout == f"wrote {out}\n", proc.stderr
    assert out.read_text(encoding="utf-8") == optseq(env, "export", cwd=repo).stdout
    assert sorted(p.name for p in repo.iterdir()) == [".optseq", "docs"]
    # again, in English, over its own earlier export; --force with it is -o's too
    proc = optseq(env, "export", "-o", "--lang", "en", "--force", cwd=repo)
    assert proc.returncode == 0 and out.read_text(encoding="utf-8").startswith("# Optimization Sequencing\n\nDep")


def test_the_default_target_follows_the_store_and_its_folder_is_made_one_level_only(cli_env, tmp_path, store):
    proc = optseq(cli_env, "export", "-o", cwd=tmp_path / "state")  # the working directory plays no part
    assert proc.returncode == 0 and proc.stdout == f"wrote {tmp_path / 'docs' / 'optimization-sequencing.md'}\n"
    deep = tmp_path / "a" / "b" / "state"
    env = {**cli_env, "OPTSEQ_DB": str(deep)}
    assert optseq(env, "status", cwd=tmp_path).returncode == 2  # a read makes no store; a write does
    assert "new store at" in optseq(env, "fact", "eval_dense", "true", cwd=tmp_path).stderr
    proc = optseq(env, "export", "-o", cwd=tmp_path)
    assert proc.stdout == f"wrote {deep.parent / 'docs' / 'optimization-sequencing.md'}\n", proc.stderr
    # a folder named by hand is never made, default's name or not
    refused(cli_env, tmp_path, store, str(tmp_path / "other" / "docs" / "x.md"), "does not exist (create it first)")


def test_a_default_target_that_is_refused_leaves_no_docs_folder(cli_env, tmp_path, db):
    (tmp_path / "docs").mkdir()
    notes = tmp_path / "docs" / "optimization-sequencing.md"
    notes.write_text("hand-written\n", encoding="utf-8")
    proc = optseq(cli_env, "export", "-o")
    assert proc.returncode == 2 and "is not an optseq export" in proc.stderr and proc.stdout == ""
    assert notes.read_text(encoding="utf-8") == "hand-written\n"
    notes.unlink()
    (tmp_path / "docs").rmdir()
    (tmp_path / "docs").symlink_to(db, target_is_directory=True)  # docs/ a link into the store: refused
    proc = optseq(cli_env, "export", "-o")
    assert proc.returncode == 2 and "is in the state directory" in proc.stderr, proc.stderr
    assert not [p for p in db.iterdir() if p.suffix == ".md"]


@pytest.mark.parametrize("answer", ["n", "escape", "y"])
def test_the_console_asks_before_replacing_a_file_optseq_did_not_write(db, tmp_path, answer):
    from optseq.console.tui.app import make_app
    from optseq.console.tui.dialogs.confirm import ConfirmDialog
    from tests.console.test_app import until

    notes = tmp_path / "notes [draft].md"  # brackets: Textual markup must not eat the name
    notes.write_text("hand-written\n", encoding="utf-8")

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(80, 24)) as pilot:
            dialog = await submit_export(app, pilot, notes)
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the replace question")
            question = str(app.screen.query_one("#question").render())
            assert question == f"{notes} exists (not written by optseq export). Replace it?"
            assert notes.read_text(encoding="utf-8") == "hand-written\n"  # nothing written while it asks
            await pilot.press(answer)
            if answer == "y":
                await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the preview")
            else:
                await until(pilot, lambda: app.screen is dialog and dialog.error != "", what="back on the dialog")
                assert dialog.error == f"{notes} kept; give another file to write"
                assert settled(dialog) and dialog.query_one("#path").value == str(notes)
                assert not app._notifications

    asyncio.run(go())
    text = notes.read_text(encoding="utf-8")
    if answer == "y":
        assert text.startswith("# Optimization Sequencing") and text.endswith("<!-- optseq export -->\n")
    else:
        assert text == "hand-written\n"
    assert not strays(tmp_path)


def test_the_console_asks_before_replacing_an_earlier_export(db, tmp_path):
    from optseq.console.tui.app import make_app
    from optseq.console.tui.dialogs.confirm import ConfirmDialog
    from tests.console.test_app import until

    out = tmp_path / "plan.md"

    async def go():
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(80, 24)) as pilot:
            await submit_export(app, pilot, out)
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the first preview")
            await pilot.press("escape")
            assert app.screen is app.main
            first = out.read_text(encoding="utf-8")
            assert first.endswith("<!-- optseq export -->\n")
            out.write_text(first + "\n", encoding="utf-8")  # still an export, but not what a rewrite gives
            dialog = await submit_export(app, pilot, out)
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the replace question")
            question = str(app.screen.query_one("#question").render())
            assert question == f"{out} exists (an earlier optseq export). Replace it?"
            await pilot.press("n")
            await until(pilot, lambda: app.screen is dialog and dialog.error != "", what="back on the dialog")
            assert out.read_text(encoding="utf-8") == first + "\n"
            dialog.action_submit()
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question again")
            await pilot.press("y")
            await until(pilot, lambda: type(app.screen).__name__ == "ExportPreview", what="the second preview")
            assert out.read_text(encoding="utf-8") == first

    asyncio.run(go())
    assert not strays(tmp_path)


def test_the_console_refuses_the_state_directory(db, tmp_path):
    from optseq.console.tui.app import make_app
    from tests.console.test_app import until

    async def go():
        app = make_app(DEFAULT_PLAN, db, export_dir=db)
        async with app.run_test(size=(80, 24)) as pilot:
            dialog = await submit_export(app, pilot, db / "plan.md")
            await until(pilot, lambda: dialog.error != "" and settled(dialog), what="the refusal on the error line")
            assert app.screen is dialog
            assert f"is in the state directory {db}" in dialog.error
            assert not app._notifications

    asyncio.run(go())
    assert not (db / "plan.md").exists()
