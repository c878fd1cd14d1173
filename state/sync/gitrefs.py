"""The private git repository a store syncs through (`.optseq/sync.git`, bare): the remote's writers' refs fetched
into it, a writer's segment committed in it, its ref pushed from it. The user's working tree, index and refs are
never touched: the plan's repository is only asked, read-only, for the URL of a remote it names.

A writer's ref `refs/optseq/writers/WRITER` on the remote is a chain of commits, each holding one segment
(`segment.jsonl`) and its `manifest.json`; fetched copies land under `refs/optseq/fetched/`, and the tip of each
writer this store imported is kept under `refs/optseq/imported/` so its objects stay while the store needs them.
"""
from __future__ import annotations

import json
from pathlib import Path

from optseq.state.code.git import GitError, git, is_ancestor

WRITERS = "refs/optseq/writers/"
FETCHED = "refs/optseq/fetched/"
IMPORTED = "refs/optseq/imported/"
SYNC_GIT = "sync.git"
FETCH_WAIT_S = 300.0
"""A hang guard for the network: a first sync of a long history fetches megabytes."""
_WHO = ("-c", "user.name=optseq", "-c", "user.email=optseq@localhost")


class RemoteMissing(Exception):
    """The remote names nothing git can read (no such remote, path or repository): bad input, exit 2."""


def private(store_dir: Path) -> Path:
    """The store's private bare repository, made at the first sync."""
    repo = store_dir / SYNC_GIT
    if not (repo / "HEAD").is_file():
        git(store_dir, "init", "--bare", "--quiet", str(repo))
    return repo


def remote_url(plan_dir: Path, remote: str) -> str:
    """REMOTE as a URL git can fetch: a remote name of the plan's repository (its URL, asked read-only), or a URL
    or path given as it is. RemoteMissing, one line, when it names nothing."""
    if not is_name(remote):
        if "://" not in remote and not remote.startswith("git@"):
            path = Path(remote).expanduser()
            if not path.exists():
                raise RemoteMissing(f"remote {remote}: no such path")
            return str(path.resolve())
        return remote
    try:
        return git(plan_dir, "remote", "get-url", "--", remote)
    except GitError as exc:
        raise RemoteMissing(f"remote {remote!r} is not a remote of the plan's repository ({plan_dir}): "
                            f"{str(exc).split(': ', 1)[-1]}") from None


def is_name(remote: str) -> bool:
    """Whether REMOTE names a remote of the plan's repository (else it is a URL or a path)."""
    return not ("/" in remote or ":" in remote or remote in (".", "..") or Path(remote).exists())


ACCESS = r"^(http\..*|credential\..*|url\..*|core\.sshcommand)$"
"""The plan repository's own settings for reaching a remote: what the private repository borrows (below)."""


def access(plan_dir: Path) -> dict[str, str]:
    """The plan repository's local settings for reaching its remotes (the auth header `actions/checkout` writes in
    the checkout's `.git/config`, a credential helper, a URL rewrite, an ssh command), as environment for git in the
    private repository: without them a CI job's sync could neither fetch a private repository nor push. Passed in
    GIT_CONFIG_* variables, never on a command line other users can read; nothing is written."""
    try:
        out = git(plan_dir, "config", "--local", "--includes", "-z", "--get-regexp", ACCESS, ok=(0, 1),
                  strip=False)
    except GitError:  # no repository there: a remote given as a path or URL needs none of its settings
        return {}
    pairs = [entry.split("\n", 1) for entry in out.split("\0") if entry]
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, *value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value[0] if value else "true"
    return env if pairs else {}


def check_remote(cwd: Path, url: str) -> None:
    """RemoteMissing when `url` is no repository git can read: asked before a sync makes a store that is not there
    yet, so a remote that names nothing leaves no folder behind."""
    try:
        git(cwd, "ls-remote", "--quiet", "--", url, f"{WRITERS}*", timeout=FETCH_WAIT_S)
    except GitError as exc:
        raise RemoteMissing(f"remote {url} is not a git repository optseq can read: "
                            f"{str(exc).split(': ', 1)[-1]}") from None


def fetch(repo: Path, url: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """Every writer's ref of the remote fetched into the private repository: {writer: commit}. `+` and `--prune`
    only in the private namespace: a rewritten ref is fetched as it is, so the import can see it and refuse it.
    RemoteMissing when `url` is no repository git can read (one connection: no separate check first)."""
    try:
        git(repo, "fetch", "--quiet", "--no-tags", "--prune", "--", url, f"+{WRITERS}*:{FETCHED}*",
            timeout=FETCH_WAIT_S, env=env)
    except GitError as exc:
        raise RemoteMissing(f"remote {url} is not a git repository optseq can read: "
                            f"{str(exc).split(': ', 1)[-1]}") from None
    return refs(repo, FETCHED)


def refs(repo: Path, prefix: str) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
    return {name[len(prefix):]: sha for sha, name in (line.split(" ", 1) for line in out.splitlines() if line)}


def chain(repo: Path, old: str | None, new: str) -> list[str] | None:
    """The commits after `old` up to `new`, oldest first; None when `new` does not descend from `old` (the ref was
    rewritten)."""
    if old == new:
        return []
    if old is not None:
        try:
            if not is_ancestor(repo, old, new):
                return None
        except GitError:
            return None
    span = new if old is None else f"{old}..{new}"
    return git(repo, "rev-list", "--first-parent", "--reverse", span).split()


def read_commit(repo: Path, commit: str) -> tuple[dict, bytes]:
    """A segment commit's manifest and segment bytes; ValueError naming what is missing or not JSON."""
    try:
        manifest = json.loads(git(repo, "cat-file", "blob", f"{commit}:manifest.json"))
        text = git(repo, "cat-file", "blob", f"{commit}:segment.jsonl", strip=False)
    except GitError as exc:
        raise ValueError(f"commit {commit[:12]} holds no segment ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"its manifest is not JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise ValueError("its manifest is not an object")
    return manifest, text.encode("utf-8")


def commit_segment(repo: Path, parent: str | None, manifest: dict, segment: str) -> str:
    """A new commit on `parent` holding one segment and its manifest (plumbing: no index, no working tree)."""
    seg = git(repo, "hash-object", "-w", "--stdin", given=segment)
    man = git(repo, "hash-object", "-w", "--stdin", given=json.dumps(manifest, sort_keys=True, indent=1) + "\n")
    tree = git(repo, "mktree", given=f"100644 blob {man}\tmanifest.json\n100644 blob {seg}\tsegment.jsonl\n")
    message = f"optseq segment {manifest['n']} of {manifest['writer']}: {manifest['count']} records"
    return git(repo, *_WHO, "commit-tree", tree, "-m", message, *(["-p", parent] if parent else []))


def keep_ref(repo: Path, ref: str, commit: str) -> None:
    git(repo, "update-ref", ref, commit)


def push(repo: Path, url: str, commit: str, writer: str, env: dict[str, str] | None = None) -> str | None:
    """Push `commit` to the writer's ref, never forced: None when the remote took it, else git's reason in words."""
    proc_out = git(repo, "push", "--porcelain", "--", url, f"{commit}:{WRITERS}{writer}",
                   ok=(0, 1, 128), timeout=FETCH_WAIT_S, env=env)
    for line in proc_out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] in ("!",):
            return parts[2].strip()
        if len(parts) >= 3 and parts[0] in (" ", "+", "*", "=", "-"):
            return None
    return "git push said nothing of the ref (see git push --porcelain)"
