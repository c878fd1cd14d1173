"""Gate expressions: `all` / `any` over other levers' outcomes and over named facts."""
from __future__ import annotations

from typing import Callable, Union

import msgspec


class Atom(msgspec.Struct, frozen=True):
    """`LEVER:OUTCOME` (a lever decided that way; `decided` = any outcome) or `fact:NAME` (a fact is true)."""

    lever: str | None = None
    outcome: str | None = None
    fact: str | None = None

    def text(self) -> str:
        return f"fact:{self.fact}" if self.fact else f"{self.lever}:{self.outcome}"

    @property
    def named(self) -> str:
        """The fact of `fact:NAME`, else the lever of `LEVER:OUTCOME` (the reader gives every atom one of them)."""
        return self.fact or self.lever or ""


class Gate(msgspec.Struct, frozen=True):
    op: str
    """`all` or `any`."""
    items: tuple["Expr", ...]


Expr = Union[Atom, Gate]


class Context:
    """What a gate is evaluated against: each lever's current outcome and the facts."""

    def __init__(self, outcome_of: Callable[[str], str | None], fact_of: Callable[[str], bool],
                 state_of: Callable[[str], str], pending_of: Callable[[str], str | None] = lambda lever: None):
        self.outcome_of = outcome_of
        self.fact_of = fact_of
        self.state_of = state_of
        self.pending_of = pending_of
        """Why a decided lever's decision is not in effect yet (an adopted branch not merged), or None."""


def holds(expr: Expr | None, ctx: Context) -> bool:
    if expr is None:
        return True
    if isinstance(expr, Atom):
        if expr.fact:
            return ctx.fact_of(expr.fact)
        if ctx.pending_of(expr.named):
            return False  # adopted, but its code is not in the baseline yet: nothing built on it can stand
        outcome = ctx.outcome_of(expr.named)
        if expr.outcome == "decided":
            return outcome is not None
        return outcome == expr.outcome
    results = (holds(item, ctx) for item in expr.items)
    return all(results) if expr.op == "all" else any(results)


def unmet(expr: Expr | None, ctx: Context) -> list[str]:
    """Human reasons why `expr` does not hold; empty when it holds."""
    if expr is None or holds(expr, ctx):
        return []
    if isinstance(expr, Atom):
        if expr.fact:
            return [f"fact {expr.fact} is not set true (optseq fact {expr.fact} true)"]
        if ctx.pending_of(expr.named):
            return [f"{expr.lever} is {ctx.pending_of(expr.named)}"]
        outcome = ctx.outcome_of(expr.named)
        want = "a decision" if expr.outcome == "decided" else expr.outcome
        if outcome is None:
            return [f"{expr.lever} is not decided yet ({ctx.state_of(expr.named)}); needs {want}"]
        return [f"{expr.lever} was decided {outcome}; needs {want}"]
    if expr.op == "all":
        return [reason for item in expr.items for reason in unmet(item, ctx)]
    return ["needs one of: " + " | ".join("; ".join(unmet(item, ctx)) for item in expr.items)]


def atoms(expr: Expr | None) -> list[Atom]:
    if expr is None:
        return []
    if isinstance(expr, Atom):
        return [expr]
    return [a for item in expr.items for a in atoms(item)]


def can_ever_hold(expr: Expr | None, closed: Callable[[Atom], bool]) -> bool:
    """False when the atoms that `closed` rules out make the gate impossible."""
    if expr is None:
        return True
    if isinstance(expr, Atom):
        return not closed(expr)
    results = [can_ever_hold(item, closed) for item in expr.items]
    return all(results) if expr.op == "all" else any(results)
