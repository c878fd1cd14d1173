"""`optseq doctor [--rebuild] [--prune]`: the store checked file by file, its hot file rebuilt from the journals, and
optseq's worktrees (branch levers, compare) listed or pruned."""
from __future__ import annotations

import sys
from pathlib import Path

OK, DAMAGED = 0, 2


def run_doctor(db: Path, rebuild: bool, prune: bool = False) -> int:
    from optseq.state.store.doctor import check, rebuild as rebuild_hot

    if prune:
        for line in prune_lines():
            print(line)
    if not db.is_dir():
        print(f"optseq: no store at {db}", file=sys.stderr)
        return OK if prune else DAMAGED
    if rebuild:
        for line in rebuild_hot(db):  # a StoreError (damaged journal, sound hot file) is main's one-line refusal
            print(line)
    lines, sound = check(db)
    for line in lines:
        print(line)
    if not prune:
        for line in worktree_lines():
            print(line)
    return OK if sound else DAMAGED


def worktree_lines() -> list[str]:
    """optseq's worktrees, one line each, and what `--prune` would remove; nothing when there are none."""
    from optseq.state.code import worktrees

    found = worktrees.listing()
    if not found:
        return []
    lines = [f"worktrees in {worktrees.cache_root()} (a cache of checkouts, one per commit): {len(found)}, "
             f"{_size(sum(t['bytes'] for t in found))}"]
    for tree in found:
        refs = ", ".join(tree["refs"]) or "-"
        how = [tree["state"]] + (["setup done"] if tree["setup"] else []) + (["in use by a run"] if tree["in_use"]
                                                                               else [])
        lines.append(f"  {tree['commit'][:7]}  {refs}  of {tree['repo'] or '(repository unknown)'}  "
                     f"{', '.join(how)}, last used {tree['used'] or '-'}")
    free = [t for t in found if not t["in_use"]]
    if free:
        lines.append(f"  `optseq doctor --prune` removes the {len(free)} no run holds now "
                     f"({_size(sum(t['bytes'] for t in free))}; a later run checks its commit out again)")
    return lines


def prune_lines() -> list[str]:
    from optseq.state.code import worktrees

    removed, kept = worktrees.prune()
    lines = [f"pruned {t['commit'][:7]} ({', '.join(t['refs']) or '-'}) of {t['repo'] or '(repository unknown)'}: "
             f"{t['path']}" for t in removed]
    lines += [f"kept {t['commit'][:7]} ({', '.join(t['refs']) or '-'}): a run holds it" for t in kept]
    return lines or [f"no worktrees in {worktrees.cache_root()}"]


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
