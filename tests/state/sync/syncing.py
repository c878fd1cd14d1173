"""Stores that sync through a real bare repository: a plan repository (the seed plan, its `origin` a bare
`file://` remote) and any number of stores, each its own writer, driven through the real CLI."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import DEFAULT_PLAN, OPTSEQ

HISTORY = ("runs", "decisions", "criteria", "facts", "events")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()


class Team:
    def __init__(self, root: Path):
        self.root = root
        self.remote = root / "remote.git"
        git(root, "init", "--quiet", "--bare", str(self.remote))
        self.repo = root / "plan"
        self.repo.mkdir()
        git(self.repo, "init", "--quiet", "-b", "main")
        (self.repo / "sequencing.toml").write_text(DEFAULT_PLAN.read_text(encoding="utf-8"), encoding="utf-8")
        git(self.repo, "add", "sequencing.toml")
        git(self.repo, "commit", "--quiet", "-m", "plan")
        git(self.repo, "remote", "add", "origin", f"file://{self.remote}")
        git(self.repo, "push", "--quiet", "origin", "main")

    def env(self, store: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("OPTSEQ_TEST_KILL_AT", "OPTSEQ_WRITER")}
        env.update(OPTSEQ_DB=str(self.root / store), OPTSEQ_PLAN=str(self.repo / "sequencing.toml"),
                   OPTSEQ_WRITER=store)
        env.update(extra)
        return env

    def optseq(self, store: str, *args: str, code: int | None = 0, cwd: Path | None = None,
               **extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([*OPTSEQ, *args], env=self.env(store, **extra), capture_output=True, text=True,
                              timeout=600, cwd=cwd or self.repo)
        assert code is None or proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc

    def records(self, store: str) -> dict[tuple[str, str, int], dict]:
        """Every record of a store by its origin: (table, writer, id in its writer's store); asserts none twice."""
        from optseq.state.store.store import Store

        with Store.open(self.root / store, mode="read") as s:
            me = (s.kept("sync") or {}).get("writer")
            out: dict[tuple[str, str, int], dict] = {}
            for table in HISTORY:
                for r in s.all(table):
                    if table == "events" and r.get("type") == "sync_writer":
                        continue  # a store's note of its own writer, never pushed (state/sync/recover.py)
                    o = r.get("origin")
                    key = (table, o["writer"], o["id"]) if isinstance(o, dict) else (table, me, r["id"])
                    assert key not in out, (store, key, "twice")
                    out[key] = r
        return out

    def writer(self, store: str) -> str:
        from optseq.state.store.store import Store

        with Store.open(self.root / store, mode="read") as s:
            return s.kept("sync")["writer"]

    def files(self, store: str) -> dict[str, bytes]:
        """The store's journals, byte for byte: what 'nothing local changed' compares."""
        return {p.name: p.read_bytes() for p in sorted((self.root / store / "journal").glob("*.jsonl"))}
