"""A store whose hot file was rebuilt (`optseq doctor --rebuild`) has lost its `sync` document; its private
repository has not: the writer's name is in its config, the tip of each writer it imported under
`refs/optseq/imported/`, and the imported records carry their origin. From those the document is made again, and
what this writer pushed is found on the remote (sync.py's adoption), so a rebuilt store imports nothing twice and
pushes nothing again."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from optseq.state.code.git import GitError, git
from optseq.state.store.layout import HISTORY
from optseq.state.sync import gitrefs
from optseq.state.sync.idmap import IdMap

WRITER_KEY = "optseq.writer"


def remember_writer(repo: Path, writer: str) -> None:
    git(repo, "config", WRITER_KEY, writer)


def remembered_writer(repo: Path) -> str | None:
    try:
        return git(repo, "config", "--get", WRITER_KEY, ok=(0, 1)) or None
    except GitError:
        return None


def recovered(store, repo: Path, writer: str) -> dict[str, Any]:
    """The sync document made again from the private repository and the records' origins."""
    applied: dict[str, Any] = {}
    for other, commit in gitrefs.refs(repo, gitrefs.IMPORTED).items():
        manifest, _ = gitrefs.read_commit(repo, commit)
        applied[other] = {"n": int(manifest.get("n") or 0), "commit": commit}
    ids = IdMap({})
    for table in HISTORY:
        for record in store.all(table):
            origin = record.get("origin")
            if isinstance(origin, dict) and isinstance(origin.get("id"), int) and origin.get("writer") in applied:
                ids.add(origin["writer"], table, origin["id"], record["id"])
    for other, was in applied.items():
        was["ids"] = ids.of(other)
    return {"writer": writer, "pushed": {"n": 0, "commit": None, "ends": {}, "through": []}, "applied": applied}
