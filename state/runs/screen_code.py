"""A screen of branch levers: the commit each design run launches (the baseline with the code of its branch levers
that are on merged in, state/code/combine.py), made as the screen is prepared; the worktree of each, made as the
screen starts and held until it ends (state/code/worktrees.py); what the screen's and its confirmation's records
say of them. A screen of no branch lever has none of it: its runs launch the workload where the plan says."""
from __future__ import annotations

from collections.abc import Iterable

from optseq.state.errors import InputError
from optseq.state.runs.screen_levers import Screen


def trees_spec(screen: Screen) -> dict:
    """The arms driver's `trees` every pass shares: where the workload runs in each worktree, and its setup."""
    code = screen.screened.code
    return {} if code is None else {"trees": {"rel": code.rel, "setup": list(code.setup) or None}}


def combinations(screen: Screen) -> None:
    """Every commit the design's runs launch, made now in the object store (a screen of branch levers): a set of
    them that does not merge is refused before anything runs (the levers merged pairwise in choose; three may
    still meet in one file). With four branch levers or fewer every set is made, so that the confirmation of
    whichever combination wins finds its commit made too."""
    from optseq.state.code import combine
    from optseq.state.code import git as g

    code = screen.screened.code
    if code is None:
        return
    sets = [screen.screened.on(levels) for levels in screen.design.runs]
    if len(code.branches) <= 4:
        sets += [[b.lever for i, b in enumerate(code.branches) if mask >> i & 1]
                 for mask in range(2 ** len(code.branches))]
    for on in sets:
        try:
            code.commit(on)
        except combine.Clash as clash:
            raise InputError(f"--run screen: the code of {code.named(on)} cannot be combined: {clash} (each pair "
                             "merges, all of them do not); screen fewer branch levers") from None
        except g.GitError as exc:
            raise InputError(f"--run screen: {exc}") from None


def worktrees(screen: Screen, sets: Iterable[Iterable[str]]) -> None:
    """The worktree of each set's commit, made where missing (in optseq's cache, worktrees.py) and held until the
    screen ends; InputError naming the commit git could not check out."""
    from optseq.state.code import branch, combine, worktrees as trees
    from optseq.state.code import git as g

    code = screen.screened.code
    if code is None or screen.holds is None:
        return
    for on in sets:
        on = list(on)
        try:
            commit = code.commit(on)
            if commit in screen.trees:
                continue
            tree = trees.ensure(code.repo, commit, code.named(on), screen.holds)
        except combine.Clash as clash:
            raise InputError(f"--run screen: the code of {code.named(on)} cannot be combined: {clash}") from None
        except (g.GitError, OSError) as exc:
            raise InputError(f"cannot check out the code of {code.named(on)} into optseq's "
                             f"worktrees ({trees.cache_root()}): {branch.why_unmade(exc)}") from None
        screen.trees[commit] = tree.for_driver(code.named(on))


def code_of(screen: Screen) -> dict:
    """The screen record's `code`: the repository, the baseline, each branch lever's commit, and the commit each
    design run launched (by its index): what a confirmation, or a later reader, knows was measured."""
    code = screen.screened.code
    if code is None:
        return {}
    return {"code": {**code.to_dict(), "runs": [screen.screened.commit(levels) for levels in screen.design.runs]}}


def confirm_code(screen: Screen, levers: tuple[str, ...], spec: dict) -> dict:
    """For a screen of branch levers, the confirmation's two arms in worktrees (set in `spec`): the baseline's
    commit, and the commit combining the code of the confirmed branch levers (the baseline's where none is among
    them), as the design's runs launched them. Returns the confirm record's `code` ({} for no branch lever)."""
    code = screen.screened.code
    if code is None:
        return {}
    on = [lid for lid in levers if any(b.lever == lid for b in code.branches)]
    worktrees(screen, ([], on))
    base, combined = code.commit([]), code.commit(on)
    spec["trees"] = {**trees_spec(screen)["trees"], "baseline": screen.trees[base], "candidate": screen.trees[combined]}
    return {"code": {"repo": code.repo, "rel": code.rel, "baseline": {"ref": code.base_ref, "commit": base},
                     "candidate": {"ref": code.named(on), "commit": combined}}}


def codes_of(screen: Screen) -> dict:
    """The screen's fingerprint's `codes`: per branch lever, the commits its decision stands on (the screen's
    baseline and the lever's own candidate), as a lever's run keeps its `code`: what tells, later, whether an adopted
    branch has landed in the baseline, or moved (state/code/landing.py)."""
    code = screen.screened.code
    if code is None:
        return {}
    return {"codes": {b.lever: {"repo": code.repo, "rel": code.rel,
                                "baseline": {"ref": code.base_ref, "commit": code.base},
                                "candidate": {"ref": b.ref, "commit": b.commit}} for b in code.branches}}
