"""`optseq doctor [--rebuild] [--prune [--all]]`: the store checked file by file, its hot file rebuilt from the
journals, and optseq's worktrees (branch levers, compare) listed, or pruned: those of the plan's repository, or
with `--all` those of every repository in the shared cache."""
from __future__ import annotations

import sys
from pathlib import Path
from optseq.state.api import Exit



def run_doctor(db: Path, rebuild: bool, prune: bool = False, every: bool = False, plan: Path | None = None) -> int:
    from optseq.state.api import check_store as check, rebuild_store as rebuild_hot

    if prune:
        repo = None if every else _repository(plan)
        if repo is None and not every:
            where = plan.parent if plan is not None else Path.cwd()
            print(f"optseq: doctor --prune removes the worktrees of the plan's repository, and {where} is in no git "
                  "repository (`optseq doctor --prune --all` removes those of every repository)", file=sys.stderr)
            return Exit.BAD_INPUT
        for line in prune_lines(repo):
            print(line)
    from optseq.state.api import holds_store

    if not holds_store(db):  # a folder with neither the hot file nor journals: a typo'd --db, or nothing made yet
        print(f"optseq: no store at {db}: nothing to check (the console or a write makes one)", file=sys.stderr)
        return Exit.OK if prune else Exit.BAD_INPUT
    if rebuild:
        for line in rebuild_hot(db):  # a StoreError (damaged journal, sound hot file) is main's one-line refusal
            print(line)
    lines, sound = check(db)
    for line in lines:
        print(line)
    if not prune:
        for line in worktree_lines():
            print(line)
        print(testbed_line())
    return Exit.OK if sound else Exit.BAD_INPUT


def testbed_line() -> str:
    """`testbed here: vm-d53289 (vm · Xeon × 2 · Linux 6)`: what this machine's runs record as their testbed,
    its fingerprint's parts in the open (OPTSEQ_TESTBED names it otherwise; a plan's [testbed] name too)."""
    from optseq.state.api import InputError
    from optseq.state.api import testbed_local as local, testbed_text as text

    try:
        return f"testbed here: {text(local())}"
    except InputError as exc:
        return f"testbed here: {exc}"


def worktree_lines() -> list[str]:
    """optseq's worktrees, one line each, and what `--prune` would remove; nothing when there are none."""
    from optseq.state.api import worktrees

    found = worktrees.listing()
    shipped = _shipped()
    if not found and not shipped:
        return []
    if not found:
        return [f"worktrees in {worktrees.cache_root()}: none; {len(shipped)} pairs packed for Ray jobs "
                f"({_size(sum(p.stat().st_size for p in shipped))}): `optseq doctor --prune` removes them"]
    lines = [f"worktrees in {worktrees.cache_root()} (a cache of checkouts, one per commit): {len(found)}, "
             f"{_size(sum(t['bytes'] for t in found))}"]
    for tree in found:
        refs = ", ".join(tree["refs"]) or "-"
        state = tree["state"] + (f" ({worktrees.named(tree['changed'])}: the next run resets it)"
                                 if tree["changed"] else "")
        how = [state] + (["setup done"] if tree["setup"] else []) + (["in use by a run"] if tree["in_use"]
                                                                               else [])
        lines.append(f"  {tree['commit'][:7]}  {refs}  of {tree['repo'] or '(repository unknown)'}  "
                     f"{', '.join(how)}, last used {tree['used'] or '-'}")
    if shipped:
        lines.append(f"  and {len(shipped)} pair{'s' * (len(shipped) != 1)} of commits packed for Ray jobs "
                     f"({_size(sum(p.stat().st_size for p in shipped))})")
    free = [t for t in found if not t["in_use"]]
    if free or shipped:
        lines.append(f"  `optseq doctor --prune` removes the {len(free)} no run holds now "
                     f"({_size(sum(t['bytes'] for t in free))}; a later run checks its commit out again)"
                     + (" and the packed pairs" if shipped else ""))
    return lines


def _shipped() -> list:
    from optseq.state.api import shipped_listing as listing

    return listing()


def _repository(plan: Path | None) -> Path | None:
    """The repository the plan's folder (else the working folder) is in: the one whose worktrees --prune removes."""
    from optseq.state.api import git

    return git.toplevel(plan.resolve().parent if plan is not None and plan.exists() else Path.cwd())


def prune_lines(repo: Path | None = None) -> list[str]:
    from optseq.state.api import worktrees

    from optseq.state.api import prune_shipped

    removed, kept = worktrees.prune(repo)
    packed = prune_shipped()
    lines = [f"pruned {t['commit'][:7]} ({', '.join(t['refs']) or '-'}) of {t['repo'] or '(repository unknown)'}: "
             f"{t['path']}" for t in removed]
    lines += [f"kept {t['commit'][:7]} ({', '.join(t['refs']) or '-'}): a run holds it" for t in kept]
    lines += [f"pruned the pair packed for Ray jobs: {path}" for path in packed]
    return lines or [f"no worktrees in {worktrees.cache_root()}" + (f" of {repo}" if repo is not None else "")]


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
